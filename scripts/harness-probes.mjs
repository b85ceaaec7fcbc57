// The protocol checks scripts/harnesses-check.mjs runs on an installed harness: each answers a
// small fact the node agent relies on (a method, a route, a flag, a wire string), read from the
// binary itself with no model and no account. Each probe returns { check: value } pairs; the
// script compares a candidate's with the pinned install's and prints what changed.
import { execFileSync, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

const run = (bin, args, env = {}) => {
  try {
    return execFileSync(bin, args, {
      encoding: "utf8",
      timeout: 30_000,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
  } catch (e) {
    return `${e.stdout ?? ""}${e.stderr ?? ""}`;
  }
};

/** Which of `needles` occur in the file's bytes (a compiled binary or a bundled script). */
function contains(file, needles) {
  const buf = readFileSync(file);
  return Object.fromEntries(needles.map((n) => [n, buf.includes(Buffer.from(n))]));
}

function scratch(prefix) {
  return mkdtempSync(join(tmpdir(), `clankie-probe-${prefix}-`));
}

/** Codex: the app-server methods and notifications the agent calls or reads (generate-ts), and the TUI flags. */
function probeCodex(bin) {
  const out = {};
  out.version = run(bin, ["--version"]).trim();
  const dir = scratch("codex");
  const home = join(dir, "home");
  mkdirSync(home);
  run(bin, ["app-server", "generate-ts", "--experimental", "--out", join(dir, "ts")], { CODEX_HOME: home });
  const ts = existsSync(join(dir, "ts"))
    ? readdirSync(join(dir, "ts"), { recursive: true })
        .filter((f) => String(f).endsWith(".ts"))
        .map((f) => readFileSync(join(dir, "ts", String(f)), "utf8"))
        .join("\n")
    : "";
  for (const m of [
    "initialize",
    "thread/loaded/list",
    "thread/read",
    "thread/turns/list",
    "thread/resume",
    "thread/start",
    "turn/start",
    "turn/steer",
    "turn/interrupt",
    "thread/queue/add",
    "thread/queue/start",
    "thread/queue/list",
    "thread/status/changed",
    "thread/queue/changed",
    "item/started",
    "item/completed",
    "turn/started",
    "turn/completed",
  ])
    out[`method ${m}`] = ts.includes(`"${m}"`);
  for (const f of ["clientUserMessageId", "expectedTurnId", "experimentalApi", "activeFlags"])
    out[`field ${f}`] = ts.includes(f);
  const help = run(bin, ["--help"]);
  out["flag --remote"] = /--remote\b/.test(help);
  out["flag --no-daemon"] = /--no-daemon\b/.test(help);
  out["app-server daemon"] = /daemon/.test(run(bin, ["app-server", "--help"]));
  rmSync(dir, { recursive: true, force: true });
  return out;
}

/** Claude Code: the channel contract, the hooks, the transcript words and the inbox socket, as strings in the binary. */
function probeClaude(bin) {
  const out = {};
  out.version = run(bin, ["--version"]).trim();
  const real = realpathSync(bin);
  const found = contains(real, [
    "claude/channel",
    "notifications/claude/channel",
    "claude/channel/permission",
    "tengu_harbor",
    "dangerously-load-development-channels",
    "queue-operation",
    "SessionStart",
    "UserPromptSubmit",
    "AskUserQuestion",
    "CLAUDE_CODE_MESSAGING_SOCKET",
    "CLAUDE_CODE_MESSAGING_TOKEN",
    "messagingSocketPath",
    "cross-session-message",
    "crossSessionInbound",
  ]);
  for (const [k, v] of Object.entries(found)) out[`string ${k}`] = v;
  const help = run(bin, ["--help"]);
  for (const f of ["--mcp-config", "--settings", "--channels", "--session-id", "--resume", "--allowedTools"])
    out[`flag ${f}`] = help.includes(f);
  return out;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** OpenCode: the v1 and v2 routes the agent uses, from the server's own OpenAPI document. */
async function probeOpenCode(bin) {
  const out = {};
  const dir = scratch("opencode");
  const env = { PATH: process.env.PATH };
  for (const k of ["HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"]) {
    env[k] = join(dir, k.toLowerCase());
    mkdirSync(env[k], { recursive: true });
  }
  // Its own homes, no autoupdate: a bare `opencode` may reach for the network and wait.
  mkdirSync(join(env.XDG_CONFIG_HOME, "opencode"), { recursive: true });
  writeFileSync(
    join(env.XDG_CONFIG_HOME, "opencode/opencode.json"),
    JSON.stringify({ autoupdate: false, share: "disabled" }),
  );
  out.version = run(bin, ["--version"], env).trim();
  const port = await freePort();
  const child = spawn(bin, ["serve", "--port", String(port), "--hostname", "127.0.0.1"], {
    env,
    cwd: dir,
    stdio: "ignore",
  });
  let doc;
  for (let i = 0; i < 100 && !doc; i++) {
    await new Promise((r) => setTimeout(r, 300));
    doc = await fetch(`http://127.0.0.1:${port}/doc`, { signal: AbortSignal.timeout(3000) })
      .then((r) => (r.ok ? r.json() : undefined))
      .catch(() => undefined);
  }
  child.kill("SIGTERM");
  const paths = Object.keys(doc?.paths ?? {});
  out["openapi served"] = paths.length > 0;
  for (const p of [
    "/session",
    "/session/status",
    "/session/{sessionID}/prompt_async",
    "/session/{sessionID}/message",
    "/session/{sessionID}/abort",
    "/event",
    "/question",
    "/question/{requestID}/reply",
    "/api/session/{sessionID}/prompt",
    "/api/session/{sessionID}/interrupt",
    "/api/session/active",
  ])
    out[`route ${p}`] = paths.includes(p);
  await new Promise((r) => setTimeout(r, 500));
  rmSync(dir, { recursive: true, force: true });
  return out;
}

/** Pi: the RPC commands, the prompt's disposition and the extension API, from the package's own docs and types. */
function probePi(bin) {
  const out = {};
  out.version = run(bin, ["--version"]).trim();
  // bin is node_modules/.bin/pi (or the bin/pi wrapper beside node_modules) → the package root holds docs/ and dist/.
  const entry = existsSync(join(dirname(bin), "../node_modules/.bin/pi"))
    ? join(dirname(bin), "../node_modules/.bin/pi")
    : bin;
  let root = dirname(realpathSync(entry));
  while (root !== "/" && !existsSync(join(root, "package.json"))) root = dirname(root);
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  out.package = pkg.name;
  out.version ||= pkg.version;
  const read = (rel) => (existsSync(join(root, rel)) ? readFileSync(join(root, rel), "utf8") : "");
  // The RPC contract spans docs/rpc*.md (1.x split the commands into rpc-commands.md).
  const rpc = existsSync(join(root, "docs"))
    ? readdirSync(join(root, "docs"))
        .filter((f) => /^rpc.*\.md$/.test(f))
        .map((f) => read(`docs/${f}`))
        .join("\n")
    : "";
  for (const c of ["get_state", "prompt", "steer", "follow_up", "abort", "streamingBehavior"])
    out[`rpc ${c}`] = rpc.includes(c);
  // An event the session emits (the docs that list it moved between versions): read from the code.
  out["event queue_update"] = read("dist/core/agent-session.js").includes("queue_update");
  out["rpc prompt disposition"] = /disposition/.test(rpc);
  for (const d of ["handled", "queued", "started"]) out[`rpc disposition ${d}`] = rpc.includes(`"${d}"`);
  const ext = read("docs/extensions.md");
  for (const f of ["sendUserMessage", "deliverAs", "appendEntry", "isIdle", "hasPendingMessages", "session_start"])
    out[`extension ${f}`] = ext.includes(f);
  const types = readdirSync(join(root, "dist"), { recursive: true })
    .filter((f) => String(f).endsWith(".d.ts"))
    .map((f) => readFileSync(join(root, "dist", String(f)), "utf8"))
    .join("\n");
  const send = /sendUserMessage\([^)]*\)\s*:\s*([^;]+);/.exec(types);
  out["extension sendUserMessage returns"] = send ? send[1].trim() : "(not found)";
  return out;
}

export const PROBES = { codex: probeCodex, claude: probeClaude, opencode: probeOpenCode, pi: probePi };
