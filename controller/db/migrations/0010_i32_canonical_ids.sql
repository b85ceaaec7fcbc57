-- Issue 32 item 4, "one id, one delivery": ids are now stored in their canonical case (lower; RFC 9562 makes a UUID
-- case-insensitive on input). This lower-cases the UUIDs already stored. Where a table already holds the lower-case
-- form (or two other spellings of it), both cases were accepted as two receipts before this change: those rows are
-- kept as they are, never merged and never a unique-key failure, so a journal that has the duplicate still migrates.
-- Only one spelling per id is renamed (the least), and only when its lower-case form is absent. Seat leases
-- (seat_turns.holder) name ids too but live 30 s; they are left to expire.
CREATE TEMP TABLE "i32_renames" (
  "tbl" text NOT NULL, "old_id" text NOT NULL, "new_id" text NOT NULL
);--> statement-breakpoint
INSERT INTO "i32_renames"
  SELECT 'delivery', d."id", lower(d."id") FROM "delivery_receipts" d
  WHERE d."id" ~ '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
    AND d."id" <> lower(d."id")
    AND NOT EXISTS (SELECT 1 FROM "delivery_receipts" o WHERE o."id" = lower(d."id"))
    AND d."id" = (
      SELECT min(v."id") FROM "delivery_receipts" v WHERE lower(v."id") = lower(d."id")
    );--> statement-breakpoint
INSERT INTO "i32_renames"
  SELECT 'call', c."id", lower(c."id") FROM "operator_call_receipts" c
  WHERE c."id" ~ '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
    AND c."id" <> lower(c."id")
    AND NOT EXISTS (SELECT 1 FROM "operator_call_receipts" o WHERE o."id" = lower(c."id"))
    AND c."id" = (
      SELECT min(v."id") FROM "operator_call_receipts" v WHERE lower(v."id") = lower(c."id")
    );--> statement-breakpoint
INSERT INTO "i32_renames"
  SELECT 'hire', h."id", lower(h."id") FROM "hire_receipts" h
  WHERE h."id" ~ '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
    AND h."id" <> lower(h."id")
    AND NOT EXISTS (SELECT 1 FROM "hire_receipts" o WHERE o."id" = lower(h."id"))
    AND h."id" = (
      SELECT min(v."id") FROM "hire_receipts" v WHERE lower(v."id") = lower(h."id")
    );--> statement-breakpoint
INSERT INTO "i32_renames"
  SELECT 'report', w."id", lower(w."id") FROM "worker_reports" w
  WHERE w."id" ~ '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
    AND w."id" <> lower(w."id")
    AND NOT EXISTS (SELECT 1 FROM "worker_reports" o WHERE o."id" = lower(w."id"))
    AND w."id" = (
      SELECT min(v."id") FROM "worker_reports" v WHERE lower(v."id") = lower(w."id")
    );--> statement-breakpoint
-- Fences and settlements follow their delivery receipt; their foreign keys cannot follow an update, so they are
-- dropped for the renames and added back (and checked) at the end.
ALTER TABLE "fences" DROP CONSTRAINT "fences_delivery_id_delivery_receipts_id_fk";--> statement-breakpoint
ALTER TABLE "settlements" DROP CONSTRAINT "settlements_delivery_id_delivery_receipts_id_fk";--> statement-breakpoint
UPDATE "delivery_receipts" d SET "id" = r."new_id"
  FROM "i32_renames" r WHERE r."tbl" = 'delivery' AND d."id" = r."old_id";--> statement-breakpoint
UPDATE "fences" f SET "delivery_id" = r."new_id"
  FROM "i32_renames" r WHERE r."tbl" = 'delivery' AND f."delivery_id" = r."old_id";--> statement-breakpoint
UPDATE "settlements" s SET "delivery_id" = r."new_id"
  FROM "i32_renames" r WHERE r."tbl" = 'delivery' AND s."delivery_id" = r."old_id";--> statement-breakpoint
ALTER TABLE "fences" ADD CONSTRAINT "fences_delivery_id_delivery_receipts_id_fk"
  FOREIGN KEY ("delivery_id") REFERENCES "public"."delivery_receipts"("id")
  ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "settlements" ADD CONSTRAINT "settlements_delivery_id_delivery_receipts_id_fk"
  FOREIGN KEY ("delivery_id") REFERENCES "public"."delivery_receipts"("id")
  ON DELETE no action ON UPDATE no action;--> statement-breakpoint
-- A replay answers with the stored result body: it names the id as the journal now holds it.
UPDATE "operator_call_receipts" c SET "id" = r."new_id",
    "result" = CASE
      WHEN c."result"->>'deliveryId' = r."old_id" THEN jsonb_set(c."result", '{deliveryId}', to_jsonb(r."new_id"))
      WHEN c."result"->>'hireId' = r."old_id" THEN jsonb_set(c."result", '{hireId}', to_jsonb(r."new_id"))
      ELSE c."result" END
  FROM "i32_renames" r WHERE r."tbl" = 'call' AND c."id" = r."old_id";--> statement-breakpoint
UPDATE "hire_receipts" h SET "id" = r."new_id"
  FROM "i32_renames" r WHERE r."tbl" = 'hire' AND h."id" = r."old_id";--> statement-breakpoint
UPDATE "hire_receipts" h SET "fresh_intent_id" = r."new_id"
  FROM "i32_renames" r WHERE r."tbl" = 'hire' AND h."fresh_intent_id" = r."old_id";--> statement-breakpoint
UPDATE "hire_receipts" h SET "after_receipt_id" = r."new_id" FROM "i32_renames" r
  WHERE r."tbl" = 'hire' AND h."after_receipt_id" = r."old_id"
    AND NOT EXISTS (SELECT 1 FROM "hire_receipts" o WHERE o."after_receipt_id" = r."new_id");--> statement-breakpoint
UPDATE "worker_reports" w SET "id" = r."new_id"
  FROM "i32_renames" r WHERE r."tbl" = 'report' AND w."id" = r."old_id";--> statement-breakpoint
-- A reply's reference is no key: every UUID spelling of it is lower-cased.
UPDATE "delivery_receipts" SET "in_reply_to" = lower("in_reply_to")
  WHERE "in_reply_to" ~ '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
    AND "in_reply_to" <> lower("in_reply_to");--> statement-breakpoint
DROP TABLE "i32_renames";
