/** `clankie fleet deploy SSH_TARGET --machine NAME`: the CLI face of controller/deploy/deploy.ts. */
import { existsSync } from "node:fs";
import { homedir, userInfo } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { IssueJoinTokenRequestSchema, ListFleetRequestSchema } from "../shared/gen/clankie/fleet/v1/fleet_pb.js";
import { FleetError, ErrorCode, InvalidArgumentError } from "../shared/errors.js";
import { isValidName } from "../shared/ids.js";
import { readControllerRecord } from "../shared/controller-record.js";
import { loadDeploy } from "../controller/for-cli.js";
import { ownerClients } from "../shared/owner-client.js";
import { emit, type OutputOptions } from "./output.js";
import type { FleetFlags } from "./fleet-flags.js";
import { quoteInput } from "../shared/public-text.js";

const ONLINE_TIMEOUT_MS = 90_000;

function defaultIdentity(): string {
  for (const f of ["id_ed25519", "id_ecdsa", "id_rsa"]) {
    const p = join(homedir(), ".ssh", f);
    if (existsSync(p)) return p;
  }
  throw new InvalidArgumentError("no SSH key in ~/.ssh (id_ed25519, id_ecdsa, id_rsa): pass --identity FILE");
}

export async function fleetDeploy(targetText: string | undefined, f: FleetFlags, out: OutputOptions): Promise<number> {
  if (!targetText || !f.machine)
    throw new InvalidArgumentError(
      "usage: clankie fleet deploy SSH_TARGET --machine NAME [--identity FILE] [--port P] [--accept-new] [--rollback]",
    );
  if (!isValidName(f.machine))
    throw new InvalidArgumentError(
      `machine name ${quoteInput(f.machine)} must be 1-64 letters, digits, '.', '-' or '_'`,
    );
  const port = f.port === undefined ? undefined : Number(f.port);
  if (port !== undefined && !(Number.isInteger(port) && port > 0 && port < 65536))
    throw new InvalidArgumentError(`--port must be 1-65535, got ${f.port}`);
  const { fleet } = ownerClients(f.stateDir, f.controller);
  const agentUrl = f.agentUrl ?? readControllerRecord(f.stateDir)?.agentUrl;
  if (!agentUrl)
    throw new FleetError(
      ErrorCode.InvalidArgument,
      "the controller's agent URL is unknown: pass --controller-agent-url https://HOST:PORT (an address the target can reach)",
    );
  const machine = f.machine;
  const log = (line: string) => (out.json ? process.stderr : process.stdout).write(line + "\n");
  const { deploy, parseTarget } = await loadDeploy();
  const report = await deploy({
    target: parseTarget(targetText, port, userInfo().username),
    machine,
    identityFile: f.identity ?? defaultIdentity(),
    knownHosts: f.knownHosts ?? join(homedir(), ".ssh", "known_hosts"),
    acceptNew: f.acceptNew,
    rollback: f.rollback,
    remoteDir: f.remoteDir,
    agentUrl,
    issueJoinToken: async () => (await fleet.issueJoinToken(create(IssueJoinTokenRequestSchema, { machine }))).token,
    waitOnline: async (since) => {
      const deadline = Date.now() + ONLINE_TIMEOUT_MS;
      for (;;) {
        const m = (await fleet.listFleet(create(ListFleetRequestSchema, {}))).machines.find((x) => x.name === machine);
        if (m?.status === "online" && Number(m.lastSeenUnixMs) >= since) return { agentVersion: m.agentVersion };
        if (Date.now() > deadline)
          throw new FleetError(
            ErrorCode.AgentUnreachable,
            `${machine} did not come online within ${ONLINE_TIMEOUT_MS / 1000} s (status ${m?.status ?? "unknown"}); see the agent's log on the target (systemd: journalctl --user -u clankie-agent; supervisor: agent.log, macOS: agent.err.log, in the install directory; Windows: the task runs only while the user is logged on)`,
          );
        await new Promise((r) => setTimeout(r, 250));
      }
    },
    progress: (i, total, text, status, detail) => {
      if (status === "start") log(`[${i}/${total}] ${text} …`);
      else log(`[${i}/${total}] ${text}: ${status === "ok" ? "ok" : "FAILED"}${detail ? ` (${detail})` : ""}`);
    },
  });
  emit(
    out,
    report,
    () =>
      `${report.machine} on ${report.host}: release ${report.release}${report.previous ? ` (previous ${report.previous})` : ""}, identity ${report.identityKept ? "kept" : "new"}, service ${report.service}, agent ${report.agentVersion}`,
  );
  return 0;
}
