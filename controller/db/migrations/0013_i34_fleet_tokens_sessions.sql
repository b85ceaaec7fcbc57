-- Issue 34 item 3: the tokens a state directory keeps a copy of (the owner token, global-default's lead
-- token) and the key that signs MCP session ids are the fleet's, one row each, shared by every replica.
-- value is sealed with the fleet CA passphrase when the controllers have one (protection, as fleet_ca).
CREATE TABLE IF NOT EXISTS "fleet_secrets" (
	"name" text PRIMARY KEY NOT NULL,
	"value" text NOT NULL,
	"protection" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
