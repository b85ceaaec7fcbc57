CREATE TABLE "controller_instances" (
	"id" text PRIMARY KEY NOT NULL,
	"pid" integer NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"heartbeat_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "seat_turns" (
	"seat_id" text PRIMARY KEY NOT NULL,
	"holder" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "operator_call_receipts" ADD COLUMN "controller_instance" text;--> statement-breakpoint
ALTER TABLE "fences" ADD COLUMN "conversation_id" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "fences" ADD COLUMN "disposition" text;--> statement-breakpoint
ALTER TABLE "fences" ADD COLUMN "notice_attempts" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "fences" ADD COLUMN "notice_sent_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "fences" ADD COLUMN "previous_reported_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "operator_call_receipts_in_flight_idx" ON "operator_call_receipts" USING btree ("controller_instance") WHERE "operator_call_receipts"."state" = 'in_flight';--> statement-breakpoint
CREATE INDEX "delivery_receipts_seat_content_idx" ON "delivery_receipts" USING btree ("seat_id","content_fingerprint");