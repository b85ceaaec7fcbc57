// The contract gate: buf lint, generated code current, and buf breaking against main.
// Exit 1 with a reason when any fails. Run by `npm run proto:check` and by the test suite.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const buf = join(root, "node_modules/.bin/buf");
const env = { ...process.env, PATH: `${join(root, "node_modules/.bin")}:${process.env.PATH}` };
const run = (args) => spawnSync(buf, args, { cwd: join(root, "proto"), env, encoding: "utf8" });
let failed = false;
const fail = (msg) => {
  console.error(`proto: ${msg}`);
  failed = true;
};

const lint = run(["lint"]);
if (lint.status !== 0) fail(`buf lint failed:\n${lint.stdout}${lint.stderr}`);

const out = mkdtempSync(join(tmpdir(), "clankie-proto-"));
try {
  const template = JSON.stringify({
    version: "v2",
    plugins: [{ local: "protoc-gen-es", out, opt: ["target=ts", "import_extension=js"] }],
  });
  const gen = run(["generate", "--template", template]);
  if (gen.status !== 0) fail(`buf generate failed:\n${gen.stderr}`);
  const list = (dir) =>
    readdirSync(dir, { recursive: true })
      .filter((f) => statSync(join(dir, f)).isFile())
      .map(String)
      .sort();
  const committed = join(root, "shared/gen");
  const a = list(out);
  const b = list(committed);
  if (a.join() !== b.join())
    fail(
      `shared/gen has other files than buf generates (run npm run proto): ${JSON.stringify({ generated: a, committed: b })}`,
    );
  for (const f of a) {
    if (b.includes(f) && readFileSync(join(out, f), "utf8") !== readFileSync(join(committed, f), "utf8"))
      fail(`shared/gen/${f} is stale: run npm run proto and commit`);
  }
} finally {
  rmSync(out, { recursive: true, force: true });
}

// Breaking changes: against main from a branch, against the previous commit on main.
const git = (...args) => spawnSync("git", args, { cwd: root, encoding: "utf8" });
if (git("rev-parse", "--git-dir").status === 0) {
  const branch = git("rev-parse", "--abbrev-ref", "HEAD").stdout.trim();
  const ref = branch === "main" ? "HEAD~1" : "main";
  const hasProto = git("cat-file", "-e", `${ref}:proto/buf.yaml`).status === 0;
  if (hasProto) {
    const against = `${relative(join(root, "proto"), root) || "."}/.git#ref=${ref},subdir=proto`;
    const br = run(["breaking", "--against", against]);
    if (br.status !== 0) fail(`buf breaking against ${ref} failed:\n${br.stdout}${br.stderr}`);
    else console.log(`proto: no breaking changes against ${ref}`);
  } else {
    console.log(`proto: ${ref} has no proto/ yet; nothing to compare for breaking changes`);
  }
}

if (failed) process.exit(1);
console.log("proto: lint ok, generated code current");
