/**
 * ADR 0040 addendum (Herdr), issue 12 item 5: the Herdr form of `private_app_server`, the pure
 * decision over kernel facts already read. A Herdr Codex hire's app-server is started by the
 * agent, outside the pane, so the proof is: the seat's endpoint is the recorded socket, the
 * agent's connection ends in exactly the recorded lifetime (pid + start time from the host
 * journal), that process is `codex app-server --listen unix://SOCK` by its own argv, and the
 * pane's TUI is its only client (the server's own socket pairs and this agent aside).
 */
import { describe, expect, it } from "vitest";
import {
  judgeAgentServer,
  type AgentServerFactsRead,
} from "../../../../../node-agent/harnesses/codex/private-server-herdr.js";

const SOCK = "/s/hires/h1/codex.sock";
const server = { pid: 100, startTime: 1000 };
const tui = { pid: 200, startTime: 2000 };
const base: AgentServerFactsRead = {
  path: SOCK,
  recorded: { ...server, socketPath: SOCK, pgid: 99 },
  tui,
  backend: server,
  argv: ["/x/vendor/bin/codex", "app-server", "--listen", `unix://${SOCK}`, "-c", 'model="m"'],
  clients: [tui, server, { pid: 7, startTime: 70 }],
  agentPid: 7,
};

describe("private_app_server, Herdr form (ADR 0040 addendum; issue 12 item 5)", () => {
  it("ADR 0040 addendum: the recorded server, listening on the seat's socket, whose only client is the pane's TUI, is proven", () => {
    expect(judgeAgentServer(base)).toMatchObject({ outcome: "proven", detail: expect.stringContaining("only client") });
  });
  it("ADR 0040 addendum: a backend that is not the exact recorded lifetime (another pid, or the same pid reused) is refuted", () => {
    expect(judgeAgentServer({ ...base, backend: { pid: 101, startTime: 1000 } }).outcome).toBe("refuted");
    expect(judgeAgentServer({ ...base, backend: { pid: 100, startTime: 1001 } }).outcome).toBe("refuted");
  });
  it("ADR 0040 addendum: another socket, a stopped server, or a process that is no app-server on the seat's socket is refuted", () => {
    expect(judgeAgentServer({ ...base, path: "/s/other.sock" }).outcome).toBe("refuted");
    expect(judgeAgentServer({ ...base, recorded: { ...base.recorded, stoppedAtMs: 5 } }).outcome).toBe("refuted");
    expect(judgeAgentServer({ ...base, argv: ["/x/codex", "--remote", `unix://${SOCK}`] }).outcome).toBe("refuted");
    expect(
      judgeAgentServer({ ...base, argv: ["/x/codex", "app-server", "--listen", "unix:///s/elsewhere.sock"] }).outcome,
    ).toBe("refuted");
    expect(judgeAgentServer({ ...base, argv: ["/x/codex", "app-server", "--listen", "unix://"] }).outcome).toBe(
      "refuted",
    );
  });
  it("ADR 0040 addendum: a second client (another TUI could own threads there) or no connection from the pane's TUI is refuted", () => {
    expect(judgeAgentServer({ ...base, clients: [tui, { pid: 300, startTime: 3000 }] })).toMatchObject({
      outcome: "refuted",
      detail: expect.stringContaining("other clients"),
    });
    expect(judgeAgentServer({ ...base, clients: [{ pid: 200, startTime: 2001 }] }).outcome).toBe("refuted");
    expect(judgeAgentServer({ ...base, clients: [server, { pid: 7, startTime: 70 }] })).toMatchObject({
      outcome: "refuted",
      detail: expect.stringContaining("holds no connection"),
    });
  });
});
