/**
 * `node dist/bench/micro-link-pings.js [--links 1000] [--window-s 20] [--rounds 1] [--out FILE]`: what the PINGs
 * on idle agent links cost a controller, with no product code in the way (issue 36: the controller's idle CPU
 * at 1,000 agents). A child process plays the controller: a mutual-TLS server that becomes the HTTP/2 client
 * on every connection, as on a reverse link (ADR 0021). This process plays the agents: one HTTP/2 server
 * session per link. Each case runs on fresh processes and reports the controller's CPU over the window, with
 * the links idle but for its PINGs:
 * - `controller_pings`: the controller pings a link LINK_PING_MS after its last answered PING was sent, in a
 *   sweep every LINK_PING_SWEEP_MS (controller/fleet/reverse-links.ts);
 * - `agent_pairs` / `agent_single`: every agent pings every 5 s (node-agent/service/link-round-trips.ts),
 *   a pair in a row (before issue 36) or one (now, when it returns fast).
 * Cases alternate within each round, so all see the machine's same minutes.
 */
import { fork } from "node:child_process";
import { writeFileSync } from "node:fs";
import { connect as h2connect, createServer as h2server, type ClientHttp2Session } from "node:http2";
import { connect as tlsConnect, createServer as tlsServer } from "node:tls";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { LINK_PING_MS, LINK_PING_SWEEP_MS } from "../controller/fleet/reverse-links.js";
import { createCaCertificate, generateKeyPair, issueCertificate } from "../shared/pki/x509.js";
import { round } from "./stats.js";
import { runTool } from "./tool-main.js";

const AGENT_PING_MS = 5_000;
const ALPN = ["clankie-reverse/1"];
const CASES = {
  idle: { controller: false, agent: "none" },
  controller_pings: { controller: true, agent: "none" },
  agent_pairs: { controller: false, agent: "pairs" },
  agent_single: { controller: false, agent: "single" },
  both_with_pairs: { controller: true, agent: "pairs" },
  both_with_single: { controller: true, agent: "single" },
} as const;
type CaseName = keyof typeof CASES;

interface Pki {
  ca: string;
  serverKey: string;
  serverCert: string;
  clientKey: string;
  clientCert: string;
}

async function makePki(): Promise<Pki> {
  const caPair = await generateKeyPair();
  const ca = await createCaCertificate("bench", caPair.keys);
  const issue = async (usage: "client" | "server") => {
    const pair = await generateKeyPair();
    const { certificatePem } = await issueCertificate({
      ca: { certificatePem: ca, keys: caPair.keys },
      subjectKey: pair.keys.publicKey,
      commonName: usage === "server" ? "localhost" : "bench-agent",
      fleetId: "bench",
      usage,
      ipAddresses: ["127.0.0.1"],
      notAfter: new Date(Date.now() + 86_400_000),
    });
    return { key: pair.privateKeyPem, cert: certificatePem };
  };
  const server = await issue("server");
  const client = await issue("client");
  return { ca, serverKey: server.key, serverCert: server.cert, clientKey: client.key, clientCert: client.cert };
}

/** The controller's side, in the child: accepts `links` links, then measures its CPU over the window. */
function controllerChild(p: Pki, links: number, windowS: number, pings: boolean): void {
  const sessions: { session: ClientHttp2Session; sentAt: number; out: boolean }[] = [];
  const server = tlsServer(
    { key: p.serverKey, cert: p.serverCert, ca: [p.ca], requestCert: true, minVersion: "TLSv1.3", ALPNProtocols: ALPN },
    (socket) => {
      const session = h2connect("http://link", { createConnection: () => socket });
      session.on("error", () => {});
      sessions.push({ session, sentAt: 0, out: false });
      if (sessions.length === links) setTimeout(measure, 2_000);
    },
  );
  const measure = () => {
    const sweep = setInterval(() => {
      if (!pings) return;
      const t = Date.now();
      for (const l of sessions) {
        if (l.out || t - l.sentAt < LINK_PING_MS - LINK_PING_SWEEP_MS / 2) continue;
        l.out = true;
        l.session.ping(() => {
          l.out = false;
          l.sentAt = t;
        });
      }
    }, LINK_PING_SWEEP_MS);
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    setTimeout(() => {
      const c = process.cpuUsage(cpu0);
      clearInterval(sweep);
      process.send!({ cpuPct: ((c.user + c.system) / 1000 / (performance.now() - t0)) * 100 });
    }, windowS * 1000);
  };
  server.listen(0, "127.0.0.1", () => process.send!({ port: (server.address() as { port: number }).port }));
}

/** The agents' side: `links` links, each an HTTP/2 server session that pings as the case says. */
async function runCase(p: Pki, name: CaseName, links: number, windowS: number): Promise<number> {
  const c = CASES[name];
  const child = fork(
    fileURLToPath(import.meta.url),
    ["--child", String(links), String(windowS), String(c.controller)],
    {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    },
  );
  child.send(p);
  const port = await new Promise<number>((r) => child.once("message", (m: { port: number }) => r(m.port)));
  const timers: NodeJS.Timeout[] = [];
  for (let i = 0; i < links; i++) {
    const socket = tlsConnect({
      port,
      host: "127.0.0.1",
      ca: [p.ca],
      key: p.clientKey,
      cert: p.clientCert,
      ALPNProtocols: ALPN,
    });
    await new Promise((r) => socket.once("secureConnect", r));
    const h2 = h2server();
    h2.on("session", (s) => {
      if (c.agent === "none") return;
      const ping = () => s.ping(() => c.agent === "pairs" && !s.destroyed && s.ping(() => {}));
      timers.push(setInterval(ping, AGENT_PING_MS + Math.random() * 100));
    });
    h2.emit("connection", socket);
  }
  const cpuPct = await new Promise<number>((r) => child.once("message", (m: { cpuPct: number }) => r(m.cpuPct)));
  for (const t of timers) clearInterval(t);
  child.kill();
  return cpuPct;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      links: { type: "string", default: "1000" },
      "window-s": { type: "string", default: "20" },
      rounds: { type: "string", default: "1" },
      out: { type: "string", default: "bench/results/link-pings.json" },
    },
  });
  const links = Number(values.links);
  const windowS = Number(values["window-s"]);
  const pki = await makePki();
  const byCase: Record<string, number[]> = {};
  for (let r = 0; r < Number(values.rounds); r++) {
    for (const name of Object.keys(CASES) as CaseName[]) {
      const pct = await runCase(pki, name, links, windowS);
      (byCase[name] ??= []).push(round(pct, 2));
      process.stderr.write(`[link-pings] round ${r + 1} ${name}: ${round(pct, 2)}% of a core\n`);
    }
  }
  const result = { when: new Date().toISOString(), links, window_s: windowS, controller_cpu_pct: byCase };
  writeFileSync(values.out, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

if (process.argv[2] === "--child") {
  const [links, windowS, pings] = process.argv.slice(3);
  process.once("message", (p: Pki) => controllerChild(p, Number(links), Number(windowS), pings === "true"));
} else runTool(main);
