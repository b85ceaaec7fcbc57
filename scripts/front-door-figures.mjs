#!/usr/bin/env node
/**
 * Figures for issue 11's front door, measured on a real `clankie controller` process from a
 * given checkout's dist/ (so the same script measures before and after):
 *   node scripts/front-door-figures.mjs [CHECKOUT] [OUT.json]
 * Each figure: the time to the answer, the bytes the client got to send, the controller's
 * peak RSS growth; 20,000 initialize calls' RSS; 1,100 idle sockets' fate and health after.
 * FIGURES=a,b measures only those figures (names as in the output).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { connect as h2connect, constants } from "node:http2";
import { connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";

const checkout = resolve(process.argv[2] ?? ".");
const out = process.argv[3];
const CLI = join(checkout, "dist/cli/main.js");
const MiB = 1 << 20;
const CHUNK = Buffer.alloc(MiB, 0x61);

async function startController() {
  const stateDir = mkdtempSync(join(tmpdir(), "clankie-figures-"));
  const env = { ...process.env };
  delete env.DATABASE_URL;
  const child = spawn(
    process.execPath,
    [
      "--max-old-space-size=2048",
      CLI,
      "controller",
      "--json",
      "--state-dir",
      stateDir,
      "--port",
      "0",
      "--log-level",
      "error",
    ],
    { env, stdio: ["ignore", "pipe", "pipe"] },
  );
  child.stderr.resume();
  const ready = await new Promise((res, rej) => {
    createInterface({ input: child.stdout }).once("line", (l) => res(JSON.parse(l)));
    child.once("exit", (c) => rej(new Error(`exited ${c}`)));
  });
  const token = (n) => readFileSync(join(stateDir, `${n}.token`), "utf8").trim();
  const rss = () => {
    try {
      return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))[1]) * 1024;
    } catch {
      return NaN;
    }
  };
  return {
    child,
    url: ready.url,
    mcpUrl: ready.mcpUrl,
    agentUrl: ready.agentUrl,
    token,
    rss,
    alive: () => child.exitCode === null && child.signalCode === null,
  };
}

function sampler(c) {
  let peak = c.rss();
  const t = setInterval(() => (peak = Math.max(peak, c.rss() || 0)), 20);
  return () => (clearInterval(t), Math.max(peak, c.rss() || 0));
}

function floodHttp1(c, path, headers, total, limitMs = 60_000) {
  const u = new URL(c.url);
  const base = c.rss();
  const stop = sampler(c);
  const t0 = performance.now();
  return new Promise((res) => {
    let sent = 0;
    let done = false;
    const finish = (r) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.destroy();
      res({
        ...r,
        sentMiB: sent / MiB,
        ms: Math.round(performance.now() - t0),
        peakRssGrowthMiB: Math.round((stop() - base) / MiB),
        controllerAlive: c.alive(),
      });
    };
    const timer = setTimeout(() => finish({ status: "no answer" }), limitMs);
    const req = request({
      host: u.hostname,
      port: u.port,
      path,
      method: "POST",
      headers: { ...headers, "transfer-encoding": "chunked" },
      agent: false,
    });
    const pump = () => {
      while (!done && sent < total) {
        sent += MiB;
        if (!req.write(CHUNK)) return void req.once("drain", pump);
      }
      if (!done) req.end();
    };
    req.on("response", (r) => {
      r.resume();
      finish({ status: r.statusCode });
    });
    req.on("error", (e) => finish({ status: `error ${e.code ?? e.message}` }));
    pump();
  });
}

/** `via`: another address and TLS options, e.g. the agent port without a client certificate. */
function floodGrpc(c, path, token, total, limitMs = 60_000, via = undefined) {
  const base = c.rss();
  const stop = sampler(c);
  const t0 = performance.now();
  const session = via ? h2connect(via.url, via.tls) : h2connect(c.url);
  session.on("error", () => {});
  return new Promise((res) => {
    let sent = 0;
    let done = false;
    const finish = (r) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      session.destroy();
      res({
        ...r,
        sentMiB: sent / MiB,
        ms: Math.round(performance.now() - t0),
        peakRssGrowthMiB: Math.round((stop() - base) / MiB),
        controllerAlive: c.alive(),
      });
    };
    const timer = setTimeout(() => finish({ grpcStatus: "no answer" }), limitMs);
    const s = session.request({
      [constants.HTTP2_HEADER_METHOD]: "POST",
      [constants.HTTP2_HEADER_PATH]: path,
      "content-type": "application/grpc+proto",
      te: "trailers",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    });
    s.write(Buffer.from([0, (total >>> 24) & 255, (total >>> 16) & 255, (total >>> 8) & 255, total & 255]));
    const pump = () => {
      while (!done && sent < total) {
        sent += MiB;
        if (!s.write(CHUNK)) return void s.once("drain", pump);
      }
    };
    // A plain HTTP answer (404 for a route this port does not serve) is an answer too.
    s.on("response", (h) =>
      h["grpc-status"] !== undefined
        ? finish({ grpcStatus: Number(h["grpc-status"]) })
        : h[":status"] !== 200 && finish({ grpcStatus: `none (HTTP ${h[":status"]})` }),
    );
    s.on("trailers", (t) => finish({ grpcStatus: Number(t["grpc-status"]) }));
    s.on("data", () => {});
    s.on("error", (e) => finish({ grpcStatus: `error ${e.code ?? e.message}` }));
    pump();
  });
}

async function sessionFlood(c, n) {
  const before = c.rss();
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    authorization: `Bearer ${c.token("lead")}`,
  };
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "flood", version: "0" } },
  });
  const t0 = performance.now();
  let ok = 0;
  for (let i = 0; i < n; i += 50) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(50, n - i) }, () =>
        fetch(c.mcpUrl, { method: "POST", headers, body })
          .then(async (r) => (await r.text(), r.status))
          .catch(() => 0),
      ),
    );
    ok += batch.filter((s) => s === 200).length;
  }
  global.gc?.();
  await new Promise((r) => setTimeout(r, 2000));
  return {
    initialize: n,
    ok,
    ms: Math.round(performance.now() - t0),
    rssBeforeMiB: Math.round(before / MiB),
    rssAfterMiB: Math.round(c.rss() / MiB),
  };
}

async function idleSockets(c, n, waitMs) {
  const u = new URL(c.url);
  const socks = [];
  let refused = 0;
  for (let i = 0; i < n; i++) {
    const s = netConnect({ host: u.hostname, port: Number(u.port) });
    s.on("error", () => refused++);
    socks.push(s);
  }
  await new Promise((r) => setTimeout(r, waitMs));
  const open = socks.filter((s) => !s.destroyed && s.readyState === "open").length;
  const health = await fetch(`${c.url}/grpc.health.v1.Health/Check`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}",
    signal: AbortSignal.timeout(5000),
  })
    .then(async (r) => `${r.status} ${await r.text()}`)
    .catch((e) => `error ${e.cause?.code ?? e.message}`);
  for (const s of socks) s.destroy();
  return {
    sockets: n,
    stillOpenAfterMs: waitMs,
    stillOpen: open,
    errors: refused,
    healthFromAnotherConnection: health,
  };
}

const figures = { checkout, measuredAt: new Date().toISOString(), node: process.version };
const only = process.env.FIGURES ? new Set(process.env.FIGURES.split(",")) : undefined;
const run = async (name, f) => {
  if (only && !only.has(name)) return;
  const c = await startController();
  try {
    figures[name] = await f(c);
  } catch (e) {
    figures[name] = { error: String(e) };
  } finally {
    c.child.kill("SIGKILL");
  }
  console.error(name, JSON.stringify(figures[name]));
};
await run("connect_300MB_no_token", (c) =>
  floodHttp1(c, "/clankie.fleet.v1.OwnerService/AddSeat", { "content-type": "application/json" }, 300 * MiB),
);
// Since ADR 0021 the gateway is on the mutual-TLS agent port; on the main port this path is now just an unknown route.
await run("grpc_register_400MB_no_token", (c) =>
  floodGrpc(c, "/clankie.fleet.v1.AgentGatewayService/Register", undefined, 400 * MiB),
);
// The agent port's one route for a connection without a certificate (joining), 300 MB to it.
await run("agent_port_join_300MB_no_cert", (c) =>
  floodGrpc(c, "/clankie.fleet.v1.EnrollmentService/Join", undefined, 300 * MiB, 60_000, {
    url: c.agentUrl,
    tls: { rejectUnauthorized: false },
  }),
);
await run("mcp_300MB_no_token", (c) =>
  floodHttp1(
    c,
    "/mcp",
    { "content-type": "application/json", accept: "application/json, text/event-stream" },
    300 * MiB,
  ),
);
await run("mcp_300MB_with_token", (c) =>
  floodHttp1(
    c,
    "/mcp",
    {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${c.token("lead")}`,
    },
    300 * MiB,
  ),
);
await run("initialize_flood_20000", (c) => sessionFlood(c, 20_000));
await run("idle_sockets_1100", (c) => idleSockets(c, 1100, 15_000));
if (out) writeFileSync(out, JSON.stringify(figures, null, 2) + "\n");
console.log(JSON.stringify(figures, null, 2));
