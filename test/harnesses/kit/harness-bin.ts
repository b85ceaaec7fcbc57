/**
 * Where the pinned real harness binaries live (.harnesses/<name>, installed by
 * `npm run harnesses:install`). With CLANKIE_REQUIRE_HARNESSES=1 (CI) a missing binary is
 * a failure, never a skip. `npm run harnesses:check -- --suite …` points CLANKIE_HARNESSES_DIR
 * and CLANKIE_HARNESS_VERSIONS at a scratch install of newer versions, to run the same suites on them.
 */
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { join } from "node:path";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const PINS = JSON.parse(readFileSync(join(ROOT, "scripts/harnesses.json"), "utf8")) as Record<
  string,
  { package: string; version: string; bin: string; node?: string }
>;
const DIR = process.env.CLANKIE_HARNESSES_DIR || join(ROOT, ".harnesses");
/** Versions under trial (`name=version,…`), set with CLANKIE_HARNESSES_DIR by scripts/harnesses-check.mjs. */
const TRIAL: Record<string, string> = Object.fromEntries(
  (process.env.CLANKIE_HARNESS_VERSIONS ?? "")
    .split(",")
    .filter((kv) => kv.includes("="))
    .map((kv) => kv.split("=") as [string, string]),
);

export type HarnessName = "codex" | "claude" | "opencode" | "pi";

export function harnessBin(name: HarnessName): string | undefined {
  const pin = PINS[name]!;
  // A harness that needs a newer Node than ours runs through its bin/ wrapper (scripts/harnesses-install.mjs).
  const bin = join(DIR, name, pin.node ? "bin" : "node_modules/.bin", pin.bin);
  return existsSync(bin) ? bin : undefined;
}

/** The binary, or undefined when it is absent and not required; throws when required and absent. */
export function requireHarness(name: HarnessName): string | undefined {
  const bin = harnessBin(name);
  if (!bin && process.env.CLANKIE_REQUIRE_HARNESSES === "1") {
    throw new Error(
      `${name} is not installed but CLANKIE_REQUIRE_HARNESSES=1: run npm run harnesses:install -- ${name}`,
    );
  }
  return bin;
}

export function harnessVersion(name: HarnessName): string {
  return TRIAL[name] ?? PINS[name]!.version;
}
