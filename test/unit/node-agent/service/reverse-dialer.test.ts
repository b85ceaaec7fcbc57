/**
 * Issue 36 (a restart's relink at 1,000 agents; rule 55's links come back): a reverse link whose
 * TLS handshake never finishes is given up and dialled again. The controller here accepts the TCP
 * connection and never answers the ClientHello, as a connection established on the agent's side
 * but never accepted by the controller looks; without the bound the agent waited on it forever.
 */
import { createServer, type Socket } from "node:net";
import { createServer as createH2Server } from "node:http2";
import { afterEach, describe, expect, it } from "vitest";
import { startReverseDialer } from "../../../../node-agent/service/reverse-dialer.js";
import { createCaCertificate, generateKeyPair } from "../../../../shared/pki/x509.js";
import { silentLogger } from "../../../../shared/logger.js";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

describe("issue 36: a reverse link's handshake is bounded", () => {
  it("a dial whose handshake is never answered is given up and dialled again", async () => {
    const dials: Socket[] = [];
    let closedByAgent = 0;
    const silent = createServer((s) => {
      dials.push(s);
      s.on("error", () => {});
      s.on("end", () => closedByAgent++).resume();
    });
    cleanups.push(() => {
      for (const s of dials) s.destroy();
      silent.close();
    });
    const port = await new Promise<number>((r) =>
      silent.listen(0, "127.0.0.1", () => r((silent.address() as { port: number }).port)),
    );
    // Any valid key and certificate: the handshake never gets far enough to check them.
    const { keys, privateKeyPem } = await generateKeyPair();
    const cert = await createCaCertificate("dialer-test", keys, 1);
    const dialer = startReverseDialer({
      server: createH2Server(),
      tls: () => ({ ca: [cert], cert, key: privateKeyPem }),
      logger: silentLogger,
      handshakeTimeoutMs: 300,
    });
    cleanups.push(() => dialer.close());
    dialer.setUrls([`https://127.0.0.1:${port}`]);
    const t0 = performance.now();
    while (dials.length < 2 && performance.now() - t0 < 5_000) await new Promise((r) => setTimeout(r, 50));
    expect(dials.length).toBeGreaterThanOrEqual(2);
    // The first socket was closed by the agent, not left waiting.
    expect(closedByAgent).toBeGreaterThanOrEqual(1);
    expect(dialer.connectedUrls()).toEqual([]);
  }, 15_000);
});
