-- Issue 34 item 3: the tokens a state directory keeps a copy of (the owner token, global-default's lead
-- token) and the key that signs MCP session ids are the fleet's, one row each, shared by every replica.
-- value is sealed with the fleet CA passphrase when the controllers have one (protection, as fleet_ca).
CREATE TABLE IF NOT EXISTS "fleet_secrets" (
	"name" text PRIMARY KEY NOT NULL,
	"value" text NOT NULL,
	"protection" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
-- An MCP session's fleet-wide life (ADR 0037): any replica resumes a session whose row is here and
-- fresh; the session table's bounds (idle time, sessions per conversation) end it by deleting the row.
-- Its id is signed (controller/mcp/session-ids.ts), so an id no replica minted costs no query.
CREATE TABLE IF NOT EXISTS "mcp_sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"conversation_id" text NOT NULL,
	"last_used_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "mcp_sessions_conversation_idx" ON "mcp_sessions" USING btree ("conversation_id","last_used_at");
