CREATE TABLE "fleet_ca" (
	"id" text PRIMARY KEY NOT NULL,
	"fleet_id" text NOT NULL,
	"certificate_pem" text NOT NULL,
	"key_pem" text NOT NULL,
	"key_protection" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "join_tokens" (
	"id" text PRIMARY KEY NOT NULL,
	"machine" text NOT NULL,
	"secret_hash" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "machine_certs" (
	"serial" text PRIMARY KEY NOT NULL,
	"machine" text NOT NULL,
	"not_after" timestamp with time zone NOT NULL,
	"issued_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "controller_instances" ADD COLUMN "agent_url" text;--> statement-breakpoint
CREATE INDEX "machine_certs_machine_idx" ON "machine_certs" USING btree ("machine");