/**
 * Issue 10 × rule 24: certificate validity is judged on the system clock, the one the TLS
 * handshake uses, not on the journal's injectable clock. A controller whose receipt clock is
 * moved past the agent certificate's 24 h lifetime (as the retention suites do) keeps the agent's
 * links, and a restarted agent is let back in, so deliveries still go through.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControllerUnderTest, type ControllerUnderTest } from "../kit/controller-under-test.js";

const DAY = 24 * 60 * 60 * 1000;

describe("certificates on the system clock", () => {
  let t: ControllerUnderTest;
  beforeAll(async () => {
    t = await startControllerUnderTest("pglite", { heartbeatIntervalMs: 1000, deliverTimeoutMs: 10_000 });
  });
  afterAll(async () => {
    await t?.close();
  });

  const deliveredWithin = async (message: string) => {
    let res = await t.lead.call("message_seat", { seat: "inbox", message });
    // A definite not-sent under load (proof_stale) may be sent again as a new call.
    for (let i = 0; i < 20 && res.structuredContent?.reason === "proof_stale"; i++) {
      await new Promise((r) => setTimeout(r, 250));
      res = await t.lead.call("message_seat", { seat: "inbox", message });
    }
    return res.structuredContent;
  };

  it("moving the receipt clock 7 days on cuts no link: after the revocation poll has run, a delivery goes through", async () => {
    t.advance(7 * DAY);
    // The expiry/revocation poll runs every second: give it three turns.
    await new Promise((r) => setTimeout(r, 3_000));
    expect(await deliveredWithin("after the clock moved")).toMatchObject({ outcome: "delivered" });
  });

  it("a restarted agent is let back in while the receipt clock is past its certificate's lifetime", async () => {
    await t.agent.restart();
    await t.waitOnline();
    let res: Record<string, unknown> | undefined;
    // The reverse link follows the gateway's heartbeat by a moment; it must come, not be refused.
    for (let i = 0; i < 40; i++) {
      res = await deliveredWithin(`after restart ${i}`);
      if (res?.outcome === "delivered") break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(res).toMatchObject({ outcome: "delivered" });
  });
});
