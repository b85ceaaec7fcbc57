#!/usr/bin/env node
/**
 * `node scripts/bench-compare.mjs BASE [--rounds N] [--match REGEX]`: is this checkout slower than BASE?
 * Builds BASE in a scratch git worktree, then runs `npm run bench -- --quick`'s program for BASE and for this
 * checkout in alternating rounds (BASE, HEAD, BASE, HEAD…), so both see the same machine in the same minutes.
 * Prints, per latency/CPU key, the median over rounds of each side and HEAD ÷ BASE, and writes
 * bench/results/compare.json. A ratio, not a figure, is the result: CPU time moves with the VM's host.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

const root = resolve(import.meta.dirname, "..");
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: "string", default: "2" },
    match: { type: "string", default: "p50|p99|cpu_ms|round_trips|per_delivery" },
  },
});
const base = positionals[0];
if (!base) {
  process.stderr.write("usage: node scripts/bench-compare.mjs BASE [--rounds N] [--match REGEX]\n");
  process.exit(2);
}
const rounds = Number(values.rounds);
const match = new RegExp(values.match);
const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, stdio: ["ignore", "inherit", "inherit"] });
const log = (line) => process.stderr.write(`[compare] ${line}\n`);

function build(dir) {
  run("npm", ["run", "build", "--silent"], dir);
  run("npx", ["tsc", "-p", "tsconfig.bench.json"], dir);
}

/** Every numeric leaf of a result, by its dotted key. */
function leaves(value, prefix = "", out = new Map()) {
  if (typeof value === "number") out.set(prefix, value);
  else if (value && typeof value === "object")
    for (const [k, v] of Object.entries(value)) leaves(v, prefix ? `${prefix}.${k}` : k, out);
  return out;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// Under the repo's ignored .tmp/, not /tmp: the bench runs an OpenSSH it downloads there, and /tmp may be noexec.
mkdirSync(join(root, ".tmp"), { recursive: true });
const scratch = mkdtempSync(join(root, ".tmp", "compare-"));
const baseDir = join(scratch, "base");
try {
  const rev = execFileSync("git", ["rev-parse", "--short", base], { cwd: root }).toString().trim();
  const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root }).toString().trim();
  run("git", ["worktree", "add", "--detach", baseDir, rev], root);
  symlinkSync(join(root, "node_modules"), join(baseDir, "node_modules"));
  log(`building ${rev} and ${head}`);
  build(baseDir);
  build(root);
  const sides = { base: [], head: [] };
  for (let i = 0; i < rounds; i++) {
    for (const [side, dir] of [
      ["base", baseDir],
      ["head", root],
    ]) {
      const out = join(scratch, `${side}-${i}.json`);
      log(`round ${i + 1}/${rounds}: ${side}`);
      run("node", [join(dir, "dist/bench/run.js"), "--quick", "--out", out], dir);
      sides[side].push(leaves(JSON.parse(readFileSync(out, "utf8"))));
    }
  }
  const keys = [...sides.base[0].keys()].filter((k) => match.test(k) && sides.head.every((h) => h.has(k)));
  const rows = keys.map((k) => {
    const b = median(sides.base.map((m) => m.get(k)));
    const h = median(sides.head.map((m) => m.get(k)));
    return { key: k, base: b, head: h, ratio: b > 0 ? Math.round((h / b) * 100) / 100 : null };
  });
  const width = Math.max(...rows.map((r) => r.key.length));
  process.stdout.write(`${"key".padEnd(width)}  ${rev.padStart(10)}  ${head.padStart(10)}  head÷base\n`);
  for (const r of rows)
    process.stdout.write(
      `${r.key.padEnd(width)}  ${String(r.base).padStart(10)}  ${String(r.head).padStart(10)}  ${r.ratio}\n`,
    );
  const file = join(root, "bench", "results", "compare.json");
  writeFileSync(file, `${JSON.stringify({ base: rev, head, rounds, at: new Date().toISOString(), rows }, null, 2)}\n`);
  log(`wrote ${file}`);
} finally {
  if (existsSync(baseDir)) execFileSync("git", ["worktree", "remove", "--force", baseDir], { cwd: root });
  rmSync(scratch, { recursive: true, force: true });
}
