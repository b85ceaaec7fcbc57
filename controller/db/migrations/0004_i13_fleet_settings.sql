CREATE TABLE "fleet_settings" (
	"fleet" text PRIMARY KEY NOT NULL,
	"peer_messages" boolean DEFAULT false NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
