ALTER TABLE "delivery_receipts" ADD COLUMN "native_message_id" text;--> statement-breakpoint
ALTER TABLE "delivery_receipts" ADD COLUMN "native_session_path" text;