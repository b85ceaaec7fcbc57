/** The owner's switch for peer messages (OwnerService.SetPeerMessages; rule 49: off by default). */
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { type OwnerService, SetPeerMessagesResponseSchema } from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import type { Db } from "../db/open.js";
import { setPeersEnabled } from "./peers.js";

export function peerSettingMethods(db: Db, now: () => Date): Pick<ServiceImpl<typeof OwnerService>, "setPeerMessages"> {
  return {
    async setPeerMessages(req) {
      return create(SetPeerMessagesResponseSchema, { enabled: await setPeersEnabled(db, req.enabled, now()) });
    },
  };
}
