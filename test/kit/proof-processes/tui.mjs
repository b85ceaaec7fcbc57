// A native TUI stand-in for proof tests: a real process that writes {pid} to the file named
// by its first argument and then stays in the foreground until killed.
import { renameSync, writeFileSync } from "node:fs";

const [out] = process.argv.slice(2);
writeFileSync(`${out}.tmp`, JSON.stringify({ pid: process.pid }));
renameSync(`${out}.tmp`, out);
setInterval(() => {}, 1 << 30);
