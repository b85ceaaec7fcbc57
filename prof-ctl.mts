// Profiling harness (not committed): N message_seat calls against a `clankie up` started with --cpu-prof.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectLead } from "./test/kit/mcp-client.js";
const D = mkdtempSync(join(tmpdir(), "prof-up-"));
const env = { ...process.env, ...(process.argv[3] ? { DATABASE_URL: process.argv[3] } : {}) };
const up = spawn(process.execPath, ["--cpu-prof", "--cpu-prof-dir", "/tmp/prof", `${process.env.DIST ?? "dist"}/controller/cli/main.js`, "up", "--json", "--state-dir", D, "--port", "0"], { env, stdio: ["pipe", "pipe", "inherit"] });
const line: string = await new Promise((r) => up.stdout!.once("data", (b) => r(String(b))));
const { mcpUrl, token } = JSON.parse(line.split("\n")[0]!);
execFileSync(process.execPath, [`${process.env.DIST ?? "dist"}/controller/cli/main.js`, "seat", "add", "mailbox", "inbox", "--state-dir", D], { env, stdio: "inherit" });
const lead = await connectLead(mcpUrl, token);
const n = Number(process.argv[2] ?? 300);
for (let i = 0; i < 30; i++) await lead.call("message_seat", { seat: "inbox", message: `warm ${i}` });
const t0 = performance.now();
const xs: number[] = [];
for (let i = 0; i < n; i++) { const t = performance.now(); const r = await lead.call("message_seat", { seat: "inbox", message: `m ${i}` }); xs.push(performance.now() - t); if (r.isError) throw new Error(JSON.stringify(r)); }
xs.sort((a, b) => a - b);
console.log("n", n, "total", (performance.now() - t0).toFixed(0), "p50", xs[n >> 1]!.toFixed(1), "p99", xs[Math.floor(n * 0.99)]!.toFixed(1));
await lead.close();
up.kill("SIGINT");
await new Promise((r) => up.once("exit", r));
