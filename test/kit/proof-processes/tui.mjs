// A native TUI stand-in for proof tests: a real process that, when given a socket path,
// first connects to it (as a Codex TUI joins its daemon) and waits for the greeting, then
// writes {pid} to the file named by its first argument and stays in the foreground until killed.
import { connect } from "node:net";
import { renameSync, writeFileSync } from "node:fs";

const [out, socketPath] = process.argv.slice(2);
const ready = () => {
  writeFileSync(`${out}.tmp`, JSON.stringify({ pid: process.pid }));
  renameSync(`${out}.tmp`, out);
};
if (socketPath) connect(socketPath).once("data", ready);
else ready();
setInterval(() => {}, 1 << 30);
