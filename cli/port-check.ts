/**
 * The ports a controller will listen on, tried before it creates anything and before the
 * controller's modules load (issue 37 item 5: `up` on a busy port opened the embedded database
 * first, took 8.4 s, and named one port): each is bound and released at once, and every busy one
 * is named with the flag that moves it. A port taken between this check and the real listen still
 * fails there (address_in_use); this makes the common case fast and complete.
 */
import { createServer } from "node:net";
import { ErrorCode, FleetError } from "../shared/errors.js";
import { compileControllerConfig } from "../controller/for-cli.js";

export interface WantedPort {
  host: string;
  port: number;
  /** "port", "agent port": how the message names it. */
  what: string;
  /** The flag that moves it. */
  flag: string;
}

/** The main port and the agent port, with the defaults the controller's config applies. */
export interface PortFlags {
  host: string;
  port: number;
  agentHost?: string | undefined;
  agentPort?: number | undefined;
}

export function controllerPorts(f: PortFlags): WantedPort[] {
  const agent = {
    ...(f.agentHost ? { agentHost: f.agentHost } : {}),
    ...(f.agentPort !== undefined ? { agentPort: f.agentPort } : {}),
  };
  const c = compileControllerConfig({ stateDir: "", host: f.host, port: f.port, ...agent });
  const wanted: WantedPort[] = [
    { host: c.host, port: c.port, what: "port", flag: "--port" },
    { host: c.agentHost, port: c.agentPort, what: "agent port", flag: "--agent-port" },
  ];
  return wanted;
}

/** The listen error of host:port, or undefined when it is free. */
function tryListen(host: string, port: number): Promise<NodeJS.ErrnoException | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", (e: NodeJS.ErrnoException) => resolve(e));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}

export async function assertPortsFree(wanted: WantedPort[]): Promise<void> {
  // Port 0 is any free one: nothing to check.
  const busy: WantedPort[] = [];
  // One at a time: two flags naming the same port must not find each other's probe.
  for (const w of wanted) if (w.port !== 0 && (await tryListen(w.host, w.port))?.code === "EADDRINUSE") busy.push(w);
  if (busy.length === 0) return;
  const names = busy.map((w) => `the ${w.what} ${w.host}:${w.port}`).join(" and ");
  const flags = busy.map((w) => w.flag).join(" and ");
  const verb = busy.length > 1 ? "are" : "is";
  const what = `${names} ${verb} taken by another process (another clankie?); nothing was created`;
  throw new FleetError(ErrorCode.AddressInUse, `${what}; stop it or choose another ${flags}`);
}
