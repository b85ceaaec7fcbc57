// Tries newer harness versions than the pins (scripts/harnesses.json) without touching the pins or
// .harnesses/: installs each candidate into .harnesses-check/<name>/, runs the protocol checks of
// scripts/harness-probes.mjs on the pinned install and on the candidate, and prints every check
// whose answer changed. With --suite it then runs the real-binary suites given (or all of
// test/harnesses) against the candidates, through CLANKIE_HARNESSES_DIR.
//
// Usage: npm run harnesses:check [-- [name[@version] ...] [--suite [test files ...]] [--json]]
//   no name: every harness at its registry `latest`; name@version: that version.
//   Exit 0: no candidate newer, or none changed a check; 1: some check changed; 2: bad usage.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PROBES } from "./harness-probes.mjs";
import { binPath, installSpecs, writeNodeWrapper } from "./harness-node.mjs";

const root = new URL("..", import.meta.url).pathname;
const pins = JSON.parse(readFileSync(join(root, "scripts/harnesses.json"), "utf8"));
const args = process.argv.slice(2);
const json = args.includes("--json");
const suiteAt = args.indexOf("--suite");
const suiteFiles = suiteAt >= 0 ? args.slice(suiteAt + 1) : undefined;
const named = (suiteAt >= 0 ? args.slice(0, suiteAt) : args).filter((a) => !a.startsWith("--"));
const scratchDir = join(root, ".harnesses-check");
const log = (s) => (json ? process.stderr.write(`${s}\n`) : console.log(s));

const npm = (a, cwd = root) =>
  execFileSync("npm", a, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
const newer = (a, b) => {
  const pa = a.split(/[.-]/).map(Number);
  const pb = b.split(/[.-]/).map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) > (pb[i] ?? 0);
  }
  return false;
};

function install(dir, pin, version) {
  const specs = installSpecs(pin, version);
  const spec = specs.join(" ");
  const marker = join(dir, "installed.json");
  if (existsSync(marker) && JSON.parse(readFileSync(marker, "utf8")).spec === spec && existsSync(binPath(dir, pin)))
    return;
  for (const f of ["node_modules", "package.json", "package-lock.json"])
    rmSync(join(dir, f), { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "package.json"), `${JSON.stringify({ private: true })}\n`);
  log(`  installing ${spec} into ${dir}`);
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--save-exact", "--loglevel=error", ...specs], {
    cwd: dir,
    stdio: ["ignore", "inherit", "inherit"],
  });
  writeNodeWrapper(dir, pin);
  writeFileSync(marker, `${JSON.stringify({ spec, installedAt: new Date().toISOString() })}\n`);
}

const wanted = named.length ? named : Object.keys(pins);
const report = [];
const trial = [];
for (const w of wanted) {
  const [name, asked] = w.split("@");
  const pin = pins[name];
  if (!pin) {
    console.error(`unknown harness ${name}; known: ${Object.keys(pins).join(", ")}`);
    process.exit(2);
  }
  const latest = npm(["view", `${pin.package}@latest`, "version"]);
  const deprecated = npm(["view", `${pin.package}@${pin.version}`, "deprecated"]);
  const candidate = asked ?? latest;
  const entry = { name, package: pin.package, pinned: pin.version, latest, candidate, changes: [] };
  if (deprecated) entry.deprecated = deprecated;
  if (!asked && !newer(latest, pin.version)) {
    log(`${name}: pinned ${pin.version} is the registry's latest (${latest})`);
    entry.status = "current";
    report.push(entry);
    continue;
  }
  log(`${name}: pinned ${pin.version}, trying ${candidate}`);
  const dir = join(scratchDir, name);
  install(dir, pin, candidate);
  trial.push(`${name}=${candidate}`);
  const pinnedBin = binPath(join(root, ".harnesses", name), pin);
  const before = existsSync(pinnedBin) ? await PROBES[name](pinnedBin) : undefined;
  const after = await PROBES[name](binPath(dir, pin));
  if (!before)
    log(
      `  (the pinned ${pin.version} is not installed: npm run harnesses:install -- ${name}; showing the candidate's checks)`,
    );
  for (const [check, value] of Object.entries(after)) {
    const was = before?.[check];
    if (check === "version" || JSON.stringify(was) === JSON.stringify(value)) continue;
    entry.changes.push({ check, pinned: was, candidate: value });
  }
  for (const check of Object.keys(before ?? {}))
    if (!(check in after)) entry.changes.push({ check, pinned: before[check], candidate: undefined });
  entry.status = entry.changes.length ? "changed" : "same";
  entry.checks = after;
  report.push(entry);
  if (!json) {
    if (!entry.changes.length) log(`  every protocol check answers the same`);
    for (const c of entry.changes)
      log(`  changed: ${c.check}: ${JSON.stringify(c.pinned)} -> ${JSON.stringify(c.candidate)}`);
  }
}

if (json) console.log(JSON.stringify(report, null, 2));
if (suiteFiles && trial.length) {
  // The suites see one folder of harnesses: the candidates, and the pinned installs for the rest.
  const suiteDir = join(scratchDir, ".suite");
  rmSync(suiteDir, { recursive: true, force: true });
  mkdirSync(suiteDir, { recursive: true });
  const tried = new Set(trial.map((t) => t.split("=")[0]));
  for (const name of Object.keys(pins))
    symlinkSync(tried.has(name) ? join(scratchDir, name) : join(root, ".harnesses", name), join(suiteDir, name));
  log(`running the harness suites on ${trial.join(", ")}`);
  try {
    execFileSync("npx", ["vitest", "run", "--config", "vitest.harnesses.config.ts", ...suiteFiles], {
      cwd: root,
      stdio: "inherit",
      env: {
        ...process.env,
        CLANKIE_HARNESSES_DIR: suiteDir,
        CLANKIE_HARNESS_VERSIONS: trial.join(","),
        CLANKIE_REQUIRE_HARNESSES: "1",
      },
    });
  } catch {
    process.exitCode = 1;
  }
}
if (report.some((e) => e.status === "changed")) process.exitCode = 1;
