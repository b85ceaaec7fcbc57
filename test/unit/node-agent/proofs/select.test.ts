/** Provider selection by platform, and the explicit unsupported provider. */
import { describe, expect, it } from "vitest";
import { selectProofProvider } from "../../../../node-agent/proofs/select.js";

describe("select.selectProofProvider", () => {
  it("picks the provider for each supported platform by process.platform name", () => {
    expect(selectProofProvider("linux").platform).toBe("linux");
    expect(selectProofProvider("darwin").platform).toBe("darwin");
    expect(selectProofProvider("win32").platform).toBe("win32");
  });
  it("an unsupported platform answers unknown/unsupported naming the platform, never an empty fact", async () => {
    const p = selectProofProvider("freebsd");
    const id = { pid: 1, startTime: 1 };
    for (const f of [
      await p.identify(1),
      await p.ancestry(id),
      await p.foregroundGroup(id),
      await p.home(id, "codex"),
      await p.listeners(id),
    ]) {
      expect(f).toMatchObject({ known: false, reason: "unsupported" });
      expect(f.known || f.detail).toContain("freebsd");
    }
    expect(
      await p.connectionPeer({ localAddress: "127.0.0.1", localPort: 1, remoteAddress: "127.0.0.1", remotePort: 2 }),
    ).toMatchObject({ known: false, reason: "unsupported" });
  });
});
