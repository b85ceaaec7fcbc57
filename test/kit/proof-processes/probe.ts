/**
 * Runs the Linux proof provider in its own process and prints its answers as JSON, so a
 * test can run it after dropping privileges (setpriv) and see what a non-root agent sees.
 * Arguments: a JSON object {pid, startTime, tuple?}.
 */
import { LinuxProofProvider } from "../../../node-agent/proofs/linux.js";

const target = JSON.parse(process.argv[2] ?? "{}") as {
  pid: number;
  startTime: number;
  tuple?: { localAddress: string; localPort: number; remoteAddress: string; remotePort: number };
};
const provider = new LinuxProofProvider();
const out = {
  uid: process.getuid?.(),
  identify: await provider.identify(target.pid),
  home: await provider.home(target, "codex"),
  listeners: await provider.listeners(target),
  ancestry: await provider.ancestry(target),
  connectionPeer: target.tuple ? await provider.connectionPeer(target.tuple) : undefined,
};
process.stdout.write(JSON.stringify(out));
