CREATE TABLE "operator_call_receipts" (
	"id" text PRIMARY KEY NOT NULL,
	"tool" text NOT NULL,
	"conversation_id" text NOT NULL,
	"fingerprint" text NOT NULL,
	"state" text NOT NULL,
	"result" jsonb,
	"result_expired" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"settled_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "conversations" (
	"id" text PRIMARY KEY NOT NULL,
	"token_hash" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "conversations_token_hash_unique" UNIQUE("token_hash")
);
--> statement-breakpoint
CREATE TABLE "delivery_receipts" (
	"id" text PRIMARY KEY NOT NULL,
	"conversation_id" text NOT NULL,
	"seat_id" text NOT NULL,
	"content_fingerprint" text NOT NULL,
	"mode" text NOT NULL,
	"state" text NOT NULL,
	"reason" text,
	"detail" text,
	"native_receipt_id" text,
	"proof_age_ms" integer,
	"proofs" jsonb,
	"in_reply_to" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"dispatched_at" timestamp with time zone,
	"settled_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "fences" (
	"delivery_id" text PRIMARY KEY NOT NULL,
	"seat_id" text NOT NULL,
	"content_fingerprint" text NOT NULL,
	"opened_at" timestamp with time zone DEFAULT now() NOT NULL,
	"resolved_at" timestamp with time zone,
	"notice_acknowledged_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "machines" (
	"name" text PRIMARY KEY NOT NULL,
	"endpoint" text NOT NULL,
	"agent_token" text NOT NULL,
	"instance_id" text NOT NULL,
	"platform" text NOT NULL,
	"capability_version" integer NOT NULL,
	"agent_version" text NOT NULL,
	"registered_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "seats" (
	"id" text PRIMARY KEY NOT NULL,
	"machine" text NOT NULL,
	"name" text NOT NULL,
	"kind" text NOT NULL,
	"status" text NOT NULL,
	"occupant_id" text NOT NULL,
	"title" text DEFAULT '' NOT NULL,
	"input_capabilities" jsonb NOT NULL,
	"present" boolean DEFAULT true NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "settlements" (
	"id" serial PRIMARY KEY NOT NULL,
	"delivery_id" text NOT NULL,
	"disposition" text NOT NULL,
	"settled_by" text NOT NULL,
	"conversation_id" text,
	"evidence" jsonb NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "fences" ADD CONSTRAINT "fences_delivery_id_delivery_receipts_id_fk" FOREIGN KEY ("delivery_id") REFERENCES "public"."delivery_receipts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "seats" ADD CONSTRAINT "seats_machine_machines_name_fk" FOREIGN KEY ("machine") REFERENCES "public"."machines"("name") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "settlements" ADD CONSTRAINT "settlements_delivery_id_delivery_receipts_id_fk" FOREIGN KEY ("delivery_id") REFERENCES "public"."delivery_receipts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "operator_call_receipts_settled_idx" ON "operator_call_receipts" USING btree ("state","settled_at");--> statement-breakpoint
CREATE INDEX "delivery_receipts_seat_state_idx" ON "delivery_receipts" USING btree ("seat_id","state");--> statement-breakpoint
CREATE INDEX "delivery_receipts_created_idx" ON "delivery_receipts" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "fences_open_idx" ON "fences" USING btree ("seat_id") WHERE "fences"."resolved_at" is null;--> statement-breakpoint
CREATE INDEX "seats_name_idx" ON "seats" USING btree ("name");