CREATE TABLE "worker_reports" (
	"id" text PRIMARY KEY NOT NULL,
	"seat_id" text NOT NULL,
	"conversation_id" text NOT NULL,
	"unadopted" boolean DEFAULT false NOT NULL,
	"text" text NOT NULL,
	"state" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"accepted_at" timestamp with time zone DEFAULT now() NOT NULL,
	"offered_at" timestamp with time zone,
	"read_at" timestamp with time zone
);
--> statement-breakpoint
CREATE INDEX "worker_reports_conversation_idx" ON "worker_reports" USING btree ("conversation_id","state");