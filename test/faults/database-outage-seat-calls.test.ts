/**
 * Seat calls other than a message while the journal's PostgreSQL answers nothing (ADR 0033): a
 * hire and a question answer are refused journal_unavailable within the answer deadline with
 * nothing launched or sent, and an admission the database commits after that refusal is settled
 * so at once — never left in flight, never launched or sent later. PostgreSQL only.
 */
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { available } from "../kit/requirements.js";
import { startOutageFleet, type OutageFleet } from "../kit/outage-fleet.js";

const META = "clankie/seat-call";

describe.runIf(available("postgres"))(
  "hires and question answers while the journal's PostgreSQL answers nothing",
  () => {
    let outage: OutageFleet;
    beforeAll(async () => {
      outage = await startOutageFleet();
    });
    afterAll(async () => {
      await outage?.close();
    });
    const lead = () => outage.lead;
    const proxy = () => outage.proxy;

    const hireArgs = () => ({
      harness: "codex",
      workingDirectory: mkdtempSync(join(tmpdir(), "clankie-outage-hire-")),
      title: "worker",
      role: "tester",
      brief: "never sent",
    });
    const hireJournal = (id: string) => join(outage.fleet.agentStateDir, "hires", `${id}.json`);
    const settledHire = async (id: string, settledBy: (body: Record<string, unknown> | undefined) => boolean) => {
      const rec = () =>
        lead()
          .call("reconcile_seat_call", { hireId: id })
          .catch(() => undefined);
      let settled = await rec();
      for (let i = 0; i < 50 && !settledBy(settled?.structuredContent); i++) {
        await new Promise((r) => setTimeout(r, 200));
        settled = await rec();
      }
      return settled?.structuredContent;
    };

    it("a hire while the database answers nothing: journal_unavailable within the answer deadline and nothing launched; once it is back the hire is settled failed, never launched", async () => {
      const id = randomUUID();
      const args = hireArgs();
      // A fresh token check, so the hire reaches its admission before the 2 s token cache runs out.
      expect((await lead().call("list_seats", {})).isError).toBeFalsy();
      proxy().freeze();
      const t0 = performance.now();
      const res = await lead()
        .call("hire_agent", args, { [META]: { hireId: id } })
        .catch((e: Error) => e);
      // Before the hire's admission had the deadline, this waited for the lead's own timeout (60 s).
      expect(performance.now() - t0).toBeLessThan(15_000);
      expect(res instanceof Error ? res.message : JSON.stringify(res.structuredContent ?? res.content)).toMatch(
        /journal_unavailable.*nothing was launched/,
      );
      proxy().thaw();
      // The admission the frozen database held runs now. The machine's heartbeats went unrecorded
      // meanwhile, so it may find the machine offline and refuse; either way it is settled, and no
      // HireSeat ever reaches the agent.
      const body = await settledHire(id, (b) => b?.outcome === "failed");
      expect(body).toMatchObject({ outcome: "failed", hireId: id, launchCommitted: false });
      expect(["journal_unavailable", "machine_offline"]).toContain(body!.reason);
      expect(existsSync(hireJournal(id))).toBe(false);
    });

    it("a hire reservation the database commits after its call was refused is settled failed at once, never launched, and a replay of the id says so", async () => {
      const id = randomUUID();
      const args = hireArgs();
      // The machine online again after the outage above (its heartbeats went unrecorded), so the
      // admission reserves the hire rather than refusing it machine_offline.
      let online = false;
      for (let i = 0; i < 50 && !online; i++) {
        online = await outage.owner.seats().then(
          (all) => all.length > 0 && all.every((s) => s.online),
          () => false,
        );
        if (!online) await new Promise((r) => setTimeout(r, 200));
      }
      expect(online).toBe(true);
      expect((await lead().call("list_seats", {})).isError).toBeFalsy();
      // Frozen at the reservation's insert: the admission has chosen the machine (online then),
      // and what is held commits at the thaw, before the server's idle-in-transaction timeout.
      const frozen = proxy().freezeWhenClientSends('insert into "hire_receipts"');
      const res = await lead()
        .call("hire_agent", args, { [META]: { hireId: id } })
        .catch((e: Error) => e);
      await frozen;
      expect(res instanceof Error ? res.message : JSON.stringify(res.structuredContent ?? res.content)).toMatch(
        /journal_unavailable.*nothing was launched/,
      );
      proxy().thaw();
      // Left alone, the late reservation stayed reserved with its call in flight ("still in flight").
      expect(await settledHire(id, (b) => b?.reason === "journal_unavailable")).toMatchObject({
        outcome: "failed",
        reason: "journal_unavailable",
        hireId: id,
        launchCommitted: false,
      });
      const again = await lead().call("hire_agent", args, { [META]: { hireId: id } });
      expect(again.structuredContent).toMatchObject({
        outcome: "failed",
        reason: "journal_unavailable",
        hireId: id,
        launchCommitted: false,
      });
      expect(existsSync(hireJournal(id))).toBe(false);
    });

    it("a question answer while the database answers nothing: journal_unavailable within the answer deadline, not sent; the admission it commits later is settled not sent, not left in flight", async () => {
      const id = randomUUID();
      const answer = {
        seat: "inbox",
        questionAnswer: { requestId: "outage-1", answers: { colour: { answers: ["Red"] } } },
      };
      expect((await lead().call("list_seats", {})).isError).toBeFalsy();
      proxy().freeze();
      const t0 = performance.now();
      const res = await lead()
        .call("message_seat", answer, { [META]: { deliveryId: id } })
        .catch((e: Error) => e);
      // Before the answer's admission had the deadline, this waited for the lead's own timeout (60 s).
      expect(performance.now() - t0).toBeLessThan(15_000);
      expect(res instanceof Error ? res.message : JSON.stringify(res.structuredContent ?? res.content)).toMatch(
        /journal_unavailable.*the answer was not sent/,
      );
      proxy().thaw();
      // Left alone, the late admission stayed in flight: a replay answered receipt_in_use, reconcile "still in flight".
      const rec = () =>
        lead()
          .call("reconcile_seat_call", { deliveryId: id })
          .catch(() => undefined);
      let settled = await rec();
      for (let i = 0; i < 50 && settled?.structuredContent?.reason !== "journal_unavailable"; i++) {
        await new Promise((r) => setTimeout(r, 200));
        settled = await rec();
      }
      expect(settled?.structuredContent).toMatchObject({
        outcome: "undelivered",
        reason: "journal_unavailable",
        deliveryId: id,
      });
      const again = await lead().call("message_seat", answer, { [META]: { deliveryId: id } });
      expect(again.structuredContent).toMatchObject({
        outcome: "undelivered",
        reason: "journal_unavailable",
        deliveryId: id,
      });
    });
  },
);
