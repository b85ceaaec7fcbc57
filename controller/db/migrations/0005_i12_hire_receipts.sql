CREATE TABLE "hire_receipts" (
	"id" text PRIMARY KEY NOT NULL,
	"conversation_id" text NOT NULL,
	"fingerprint" text NOT NULL,
	"machine" text NOT NULL,
	"harness" text NOT NULL,
	"state" text NOT NULL,
	"reason" text,
	"seat_id" text,
	"occupant_id" text,
	"pane_id" text,
	"evidence" jsonb,
	"fresh_intent_id" text,
	"after_receipt_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"settled_at" timestamp with time zone,
	CONSTRAINT "hire_receipts_after_receipt_id_unique" UNIQUE("after_receipt_id")
);
--> statement-breakpoint
CREATE INDEX "hire_receipts_seat_idx" ON "hire_receipts" USING btree ("seat_id");--> statement-breakpoint
CREATE INDEX "hire_receipts_state_idx" ON "hire_receipts" USING btree ("state");