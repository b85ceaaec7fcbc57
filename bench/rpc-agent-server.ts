/**
 * `node dist/bench/rpc-agent-server.js`: the node agent's real gRPC handler
 * (node-agent/service/rpc-handler.ts over createAgentService, a mailbox seat in a scratch state
 * dir, the same interceptors, unary server and PING-measured link sessions) on a plaintext
 * HTTP/2 port, for bench/micro-rpc-clients.ts. Agents dial out since ADR 0021 and listen on no
 * port; the clients being compared need one to dial. Prints one JSON line (port, token, seat) and
 * serves until its stdin closes, then removes its state.
 */
import { createServer } from "node:http2";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { AddressInfo, Socket } from "node:net";
import { createAgentService } from "../node-agent/service/agent-service.js";
import { createAgentRpcHandler } from "../node-agent/service/rpc-handler.js";
import { LinkRoundTrips } from "../node-agent/service/link-round-trips.js";
import { SeatBook } from "../node-agent/seats/seat-book.js";
import { SeatLocks } from "../node-agent/seats/seat-locks.js";
import { MailboxStore } from "../node-agent/mailbox/store.js";
import { MailboxAdapter } from "../node-agent/harnesses/mailbox/adapter.js";
import { AdapterRegistry } from "../node-agent/harnesses/registry.js";
import { systemMonotonicClock } from "../node-agent/proofs/proof.js";
import { SeatKind } from "../shared/verdicts.js";
import { newToken, tokenMatcher } from "../shared/tokens.js";
import { removeScratch, scratchDir } from "./paths.js";

const SEAT = "bench-rpc";

const dir = scratchDir("rpc-agent-server");
const mailboxes = new MailboxStore(join(dir, "mailboxes"));
mkdirSync(join(dir, "mailboxes"), { recursive: true, mode: 0o700 });
const seats = new SeatBook(dir);
seats.add(SEAT, SeatKind.Mailbox, "rpc client bench");
mailboxes.create(SEAT);
const roundTrips = new LinkRoundTrips();
const impl = createAgentService({
  seats,
  adapters: new AdapterRegistry().register(new MailboxAdapter(mailboxes, systemMonotonicClock)),
  clock: systemMonotonicClock,
  mailboxes,
  roundTrips,
  locks: new SeatLocks(),
});
const token = newToken("agent");
const matches = tokenMatcher(token);
const server = createServer(
  { maxSessionMemory: 16 },
  createAgentRpcHandler(impl, (_service, t) => matches(t)),
);
roundTrips.watch(server);
// As the agent does on its links: small frames must not wait on Nagle.
server.on("connection", (s: Socket) => s.setNoDelay(true));
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(JSON.stringify({ port: (server.address() as AddressInfo).port, token, seat: SEAT }) + "\n");
});
process.stdin.resume();
process.stdin.on("end", () => {
  server.close();
  removeScratch(dir);
  process.exit(0);
});
