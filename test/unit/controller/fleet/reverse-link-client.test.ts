/**
 * Issue 17 item 2 (per-call work in the agent client): a delivery over an agent's reverse link
 * reuses the link's Connect transport and client instead of building both for every call; a
 * new token (or a new link after a redial) gets a new client.
 */
import { createServer } from "node:http2";
import { connect, type AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import { afterEach, describe, expect, it } from "vitest";
import { ReverseLinks } from "../../../../controller/fleet/reverse-links.js";

const cleanups: (() => void)[] = [];
afterEach(() =>
  cleanups
    .splice(0)
    .reverse()
    .forEach((c) => c()),
);

/**
 * A real HTTP/2 connection to a loopback server, as the link's socket. Cleartext: what is
 * under test is the client kept per link, not the mutual TLS the agent listener adds.
 */
async function socket(): Promise<TLSSocket> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const tcp = connect((server.address() as AddressInfo).port, "127.0.0.1");
  await new Promise<void>((r) => tcp.once("connect", () => r()));
  cleanups.push(() => server.close());
  return tcp as unknown as TLSSocket;
}

describe("reverse link: one Connect client per link (issue 17)", () => {
  it("repeated connections for the same machine and token share one client", async () => {
    const links = new ReverseLinks();
    cleanups.push(() => links.closeAll());
    links.accept(await socket(), { machine: "m1", serial: "01", notAfter: new Date(Date.now() + 60_000) });
    const first = links.connection("m1", "token-a");
    const second = links.connection("m1", "token-a");
    expect(second.client).toBe(first.client);
    expect(links.connection("m1", "token-b").client).not.toBe(first.client);
  });

  it("a redial (a new link for the machine) gets its own client", async () => {
    const links = new ReverseLinks();
    cleanups.push(() => links.closeAll());
    const peer = { machine: "m1", serial: "01", notAfter: new Date(Date.now() + 60_000) };
    links.accept(await socket(), peer);
    const before = links.connection("m1", "token-a");
    links.accept(await socket(), peer);
    expect(links.connection("m1", "token-a").client).not.toBe(before.client);
  });
});
