-- Issue 34 item 1 (ADR 0036): each controller instance holds a lease with an epoch, judged by the
-- database's clock; a call receipt names the epoch that admitted it. Existing rows start expired.
CREATE SEQUENCE "public"."controller_instance_epochs" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1;--> statement-breakpoint
ALTER TABLE "operator_call_receipts" ADD COLUMN "controller_epoch" bigint;--> statement-breakpoint
ALTER TABLE "controller_instances" ADD COLUMN "epoch" bigint DEFAULT nextval('controller_instance_epochs') NOT NULL;--> statement-breakpoint
ALTER TABLE "controller_instances" ADD COLUMN "lease_expires_at" timestamp with time zone DEFAULT now() NOT NULL;