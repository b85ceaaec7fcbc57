ALTER TABLE "seats" ADD COLUMN "cannot_work" jsonb;
