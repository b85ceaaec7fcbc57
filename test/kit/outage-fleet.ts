/**
 * A fleet whose journal's PostgreSQL sits behind a relay that can take it down or freeze it
 * (test/fixtures/pg-wire-relay.ts), with one mailbox seat "inbox", a lead and the owner: the
 * database-outage fault suites' common ground. PostgreSQL only.
 */
import { join } from "node:path";
import { MailboxStore } from "../../node-agent/mailbox/store.js";
import { startPgWireRelay, type PgWireRelay } from "../fixtures/pg-wire-relay.js";
import { connectLead, type LeadClient } from "./mcp-client.js";
import { ownerOf } from "./owner.js";
import { startFleet, type TestFleet } from "./start-fleet.js";
import type { ControllerHooks } from "../../controller/main.js";

export interface OutageFleet {
  fleet: TestFleet;
  proxy: PgWireRelay;
  lead: LeadClient;
  owner: ReturnType<typeof ownerOf>;
  mailbox: MailboxStore;
  close(): Promise<void>;
}

export async function startOutageFleet(hooks?: ControllerHooks): Promise<OutageFleet> {
  const target = new URL(process.env.DATABASE_URL!);
  const proxy = await startPgWireRelay(target.hostname, Number(target.port || 5432));
  // These suites hold the journal frozen past the default 10 s instance lease (two 7 s answer
  // deadlines); their subject is what a late commit does (ADR 0033), so the lease outlasts their
  // outages. A lease lost in an outage is ADR 0036's (test/faults/replica-lease.test.ts).
  const fleet = await startFleet(
    "postgres",
    { instanceLeaseMs: 60_000 },
    {
      ...(hooks ? { hooks } : {}),
      databaseUrlVia: (url) => {
        const u = new URL(url);
        u.hostname = "127.0.0.1";
        u.port = String(proxy.port);
        return u.toString();
      },
    },
  );
  const owner = ownerOf(fleet.controller.url, fleet.controller.ownerToken);
  await owner.addMailbox("inbox");
  const lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
  const mailbox = new MailboxStore(join(fleet.agentStateDir, "mailboxes"));
  return {
    fleet,
    proxy,
    lead,
    owner,
    mailbox,
    async close() {
      proxy.up();
      await lead.close();
      await fleet.close();
      await proxy.close();
    },
  };
}
