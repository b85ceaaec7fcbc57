/**
 * `clankie up` finds harness panes by itself: with a real Codex TUI already open in a tmux pane
 * (a private tmux server on its own socket), `clankie up` given only that socket — no
 * --pane-host — picks tmux, and its agent process reports the Codex as a seat with the
 * capabilities of its live control; a lead's message reaches the model through it.
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareStore } from "../kit/test-db.js";
import { startUp, type UpProcess } from "../kit/cli.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { startMockResponsesServer, type MockResponsesServer } from "../fixtures/mock-responses-server.js";
import { requireHarness } from "./kit/harness-bin.js";
import { cleanupCodexEnv, makeCodexEnv, type CodexEnv } from "./kit/codex-env.js";

const bin = requireHarness("codex");
const TMUX = "/usr/bin/tmux";

describe.runIf(bin || process.env.CLANKIE_REQUIRE_HARNESSES === "1")(
  "clankie up discovers a real Codex already open in a tmux pane",
  () => {
    let mock: MockResponsesServer;
    let cx: CodexEnv;
    let tmuxSock: string;
    let store: Awaited<ReturnType<typeof prepareStore>>;
    let up: UpProcess;
    let lead: LeadClient;

    beforeAll(async () => {
      mock = await startMockResponsesServer();
      cx = makeCodexEnv(bin!, mock.baseUrl);
      tmuxSock = join(cx.root, "tmux.sock");
      const env = Object.entries(cx.env).map(([k, v]) => `${k}=${v}`);
      // The user's setup before clankie: Codex open in a pane.
      execFileSync(TMUX, [
        "-S",
        tmuxSock,
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-s",
        "work",
        "-x",
        "200",
        "-y",
        "50",
        "-c",
        cx.workDir,
        "/usr/bin/env",
        ...env,
        bin!,
        "-C",
        cx.workDir,
      ]);
      store = await prepareStore("pglite");
      up = await startUp(
        ["--state-dir", store.stateDir, "--port", "0", "--machine", "desk", "--tmux-socket", tmuxSock],
        { DATABASE_URL: "" },
      );
      lead = await connectLead(up.ready.mcpUrl, up.ready.token);
    });
    afterAll(async () => {
      await lead?.close();
      await up?.stop();
      await store?.cleanup();
      try {
        execFileSync(TMUX, ["-S", tmuxSock, "kill-server"], { stdio: "ignore" });
      } catch {
        // already gone
      }
      if (cx) cleanupCodexEnv(bin!, cx);
      await mock?.close();
    });

    it("the Codex pane shows up as a seat with its live control, and a message reaches its model", async () => {
      type SeatView = { id: string; name: string; kind: string; inputCapabilities: { deliveryModes: string[] } };
      let seat: SeatView | undefined;
      for (let i = 0; i < 900 && !seat; i++) {
        const seats = ((await lead.call("list_seats", {})).structuredContent?.seats ?? []) as SeatView[];
        seat = seats.find((s) => s.kind === "codex" && s.inputCapabilities.deliveryModes.length > 0);
        if (!seat) await new Promise((r) => setTimeout(r, 100));
      }
      expect(seat, "a codex seat was discovered").toBeDefined();
      expect(seat!.id).toMatch(/^desk\/codex-/);
      // On a loaded machine the freshness gate may refuse (proof_stale): a definite not-sent, so asking again is safe.
      let sent = await lead.call("message_seat", { seat: seat!.name, message: "found by clankie up" });
      for (let i = 0; i < 5 && sent.structuredContent?.reason === "proof_stale"; i++)
        sent = await lead.call("message_seat", { seat: seat!.name, message: "found by clankie up" });
      expect(sent.structuredContent, JSON.stringify(sent.structuredContent)).toMatchObject({ outcome: "delivered" });
      await mock.waitFor((q) => q.lastUserText.includes("found by clankie up"));
    });
  },
);
