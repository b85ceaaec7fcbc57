import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "postgresql",
  schema: "./controller/db/schema.ts",
  out: "./controller/db/migrations",
});
