/** `clankie peers on|off`: the owner turns peer messages between this fleet's workers on or off (rule 49; off by default). */
import { create } from "@bufbuild/protobuf";
import { SetPeerMessagesRequestSchema } from "../shared/gen/clankie/fleet/v1/owner_pb.js";
import { InvalidArgumentError } from "../shared/errors.js";
import { ownerClients } from "../shared/owner-client.js";
import { emit, type OutputOptions } from "./output.js";

export async function peersSwitch(
  stateDir: string,
  controller: string | undefined,
  setting: string | undefined,
  out: OutputOptions,
): Promise<void> {
  if (setting !== "on" && setting !== "off") throw new InvalidArgumentError("usage: clankie peers on|off");
  const { owner } = ownerClients(stateDir, controller);
  const res = await owner.setPeerMessages(create(SetPeerMessagesRequestSchema, { enabled: setting === "on" }));
  emit(out, { peerMessages: res.enabled }, () => `peer messages are ${res.enabled ? "on" : "off"} for this fleet`);
}
