CREATE TABLE "seat_waiters" (
	"holder" text PRIMARY KEY NOT NULL,
	"seat_id" text NOT NULL,
	"admitted_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "seat_waiters_line_idx" ON "seat_waiters" USING btree ("seat_id","admitted_at","holder");