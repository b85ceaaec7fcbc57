/**
 * The attacker child of the front-door section: a process of its own, so that the attack's
 * CPU never stalls the event loop of the lead whose latency is measured. Over IPC it says
 * `ready`, waits for `start`, runs one attack for its window, closes its sockets and sends
 * `done` with what the server did. It ends itself when its parent goes away.
 */
import { ATTACKS, runAttack, type AttackName, type AttackSizes } from "./front-door-attacks.js";

export interface AttackerArgs {
  attack: AttackName;
  port: number;
  windowMs: number;
  sizes: AttackSizes;
}

export type AttackerMessage =
  | { type: "ready" }
  | { type: "done"; stats: Record<string, unknown> }
  | { type: "failed"; error: string };

const send = (m: AttackerMessage) => process.send!(m);

if (!process.send) throw new Error("the attacker runs as a child of the front-door bench (an IPC channel is needed)");
const args = JSON.parse(process.argv[2] ?? "{}") as AttackerArgs;
if (!ATTACKS.includes(args.attack)) throw new Error(`unknown attack ${String(args.attack)}`);
process.once("disconnect", () => process.exit(0));
process.once("message", (m: { type?: string }) => {
  if (m.type !== "start") return;
  runAttack(args.attack, args.port, args.windowMs, args.sizes).then(
    (stats) => send({ type: "done", stats }),
    (e: unknown) => send({ type: "failed", error: (e as Error).stack ?? String(e) }),
  );
});
send({ type: "ready" });
