/**
 * Issue 34 item 2 (ADR 0038): the agent's gateway URLs. `--controller` is repeatable and takes
 * comma lists; a replica's refusal is final while a lack of answer moves on to the next
 * replica; an identity stored before the change still loads with its one URL, and the list the
 * agent learns is stored and read back.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { parseControllerUrls } from "../../../../node-agent/config.js";
import { triesNextReplica } from "../../../../node-agent/service/controller-link.js";
import { identityDir, loadIdentity, writeIdentityRecord } from "../../../../node-agent/identity/identity-files.js";
import { tempDir } from "../../../kit/test-db.js";
import { createCaCertificate, generateKeyPair } from "../../../../shared/pki/x509.js";

describe("issue 34 item 2: an agent's controller URLs", () => {
  it("--controller values: repeated and comma lists, in order, blanks and repeats dropped", () => {
    expect(parseControllerUrls(undefined)).toEqual([]);
    expect(parseControllerUrls("https://a:1")).toEqual(["https://a:1"]);
    expect(parseControllerUrls("https://a:1, https://b:2,,https://a:1")).toEqual(["https://a:1", "https://b:2"]);
    expect(parseControllerUrls(["https://b:2", "https://a:1,https://c:3"])).toEqual([
      "https://b:2",
      "https://a:1",
      "https://c:3",
    ]);
  });

  it("a replica that gives no answer is left for the next; a refusal every replica would give is final", () => {
    expect(triesNextReplica(new ConnectError("connect ECONNREFUSED", Code.Unavailable))).toBe(true);
    expect(triesNextReplica(new ConnectError("deadline", Code.DeadlineExceeded))).toBe(true);
    expect(triesNextReplica(new Error("socket hang up"))).toBe(true);
    expect(triesNextReplica(new ConnectError("machine_revoked: gone", Code.PermissionDenied))).toBe(false);
    expect(triesNextReplica(new ConnectError("unknown agent instance", Code.FailedPrecondition))).toBe(false);
    expect(triesNextReplica(new ConnectError("bad seat", Code.InvalidArgument))).toBe(false);
  });

  it("an identity record from before ADR 0038 loads with its one URL; the learned list is stored and read back", async () => {
    const dir = tempDir("identity-urls");
    const { keys, privateKeyPem } = await generateKeyPair();
    const certificatePem = await createCaCertificate("fleet-test", keys, 1);
    const files = { "key.pem": privateKeyPem, "cert.pem": certificatePem, "ca.pem": certificatePem };
    mkdirSync(identityDir(dir), { recursive: true });
    for (const [name, text] of Object.entries(files)) writeFileSync(join(identityDir(dir), name), text);
    writeFileSync(
      join(identityDir(dir), "identity.json"),
      JSON.stringify({ machine: "m", fleetId: "f", controllerUrl: "https://a:1" }),
    );
    expect(loadIdentity(dir)).toMatchObject({ controllerUrl: "https://a:1", controllerUrls: ["https://a:1"] });
    writeIdentityRecord(dir, {
      machine: "m",
      fleetId: "f",
      controllerUrl: "https://a:1",
      controllerUrls: ["https://b:2", "https://c:3", "https://a:1"],
    });
    expect(loadIdentity(dir)).toMatchObject({
      controllerUrl: "https://a:1",
      controllerUrls: ["https://b:2", "https://c:3", "https://a:1"],
    });
  });
});
