/** `clankie lead token --conversation C`: mint a bearer token bound to one lead conversation. */
import { create } from "@bufbuild/protobuf";
import { IssueLeadTokenRequestSchema } from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import { InvalidArgumentError } from "../../shared/errors.js";
import { ownerClients } from "./owner-client.js";
import { emit, type OutputOptions } from "./output.js";

export async function leadToken(stateDir: string, controller: string | undefined, conversation: string | undefined, out: OutputOptions): Promise<void> {
  if (!conversation) throw new InvalidArgumentError("usage: clankie lead token --conversation ID");
  const { owner } = ownerClients(stateDir, controller);
  const res = await owner.issueLeadToken(create(IssueLeadTokenRequestSchema, { conversationId: conversation }));
  emit(out, { conversationId: res.conversationId, token: res.token }, () => `conversation ${res.conversationId}\ntoken ${res.token}`);
}
