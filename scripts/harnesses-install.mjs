// Installs the pinned real harness binaries (hundreds of MB each, so not dependencies of
// `npm ci`) into the ignored .harnesses/<name>/ folders. Already-current installs are kept.
// A pin with "node" also gets that Node and a bin/<bin> wrapper (scripts/harness-node.mjs).
// Usage: npm run harnesses:install [-- codex claude ...]
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { binPath, installSpecs, writeNodeWrapper } from "./harness-node.mjs";

const root = new URL("..", import.meta.url).pathname;
const pins = JSON.parse(readFileSync(join(root, "scripts/harnesses.json"), "utf8"));
const wanted = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(pins);

for (const name of wanted) {
  const pin = pins[name];
  if (!pin) {
    console.error(`unknown harness ${name}; known: ${Object.keys(pins).join(", ")}`);
    process.exit(2);
  }
  const dir = join(root, ".harnesses", name);
  const marker = join(dir, "installed.json");
  const specs = installSpecs(pin);
  const spec = specs.join(" ");
  if (existsSync(marker) && JSON.parse(readFileSync(marker, "utf8")).spec === spec && existsSync(binPath(dir, pin))) {
    console.log(`${name}: ${spec} already installed`);
    continue;
  }
  // Another version (or a renamed package, Pi's) was here: start clean, so one bin answers to the name.
  if (existsSync(marker))
    for (const f of ["node_modules", "package.json", "package-lock.json"])
      rmSync(join(dir, f), { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  if (!existsSync(join(dir, "package.json")))
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: `clankie-harness-${name}`, private: true }) + "\n");
  console.log(`${name}: installing ${spec} into ${dir}`);
  const started = Date.now();
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--save-exact", "--loglevel=error", ...specs], {
    cwd: dir,
    stdio: "inherit",
  });
  writeNodeWrapper(dir, pin);
  writeFileSync(marker, JSON.stringify({ spec, installedAt: new Date().toISOString() }) + "\n");
  console.log(`${name}: done in ${Math.round((Date.now() - started) / 1000)} s`);
}
