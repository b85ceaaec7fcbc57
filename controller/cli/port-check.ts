/**
 * The ports a controller will listen on, tried before it creates anything: each is bound and
 * released at once. A port taken between this check and the real listen still fails there
 * (address_in_use); this only makes the common case fast and complete.
 */
import { createServer } from "node:net";
import { ErrorCode, FleetError } from "../../shared/errors.js";

export interface WantedPort {
  host: string;
  port: number;
  /** "port", "agent port": how the message names it. */
  what: string;
  /** The flag that moves it. */
  flag: string;
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
