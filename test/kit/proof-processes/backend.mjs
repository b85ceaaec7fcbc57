// A native backend stand-in for proof tests: a real process that listens on loopback TCP
// (and, when given a path, a unix socket), holds accepted connections open, greets each accepted
// connection with one byte (so a test knows accept() happened), and writes {pid, port} to
// the file named by its first argument once it listens.
import { createServer } from "node:net";
import { renameSync, writeFileSync } from "node:fs";

const [out, unixPath] = process.argv.slice(2);
const held = [];
const tcp = createServer((s) => {
  held.push(s);
  s.write("\n");
});
tcp.listen(0, process.env.BACKEND_HOST ?? "127.0.0.1", () => {
  const report = () => {
    writeFileSync(`${out}.tmp`, JSON.stringify({ pid: process.pid, port: tcp.address().port }));
    renameSync(`${out}.tmp`, out);
  };
  if (unixPath)
    createServer((s) => {
      held.push(s);
      s.write("\n");
    }).listen(unixPath, report);
  else report();
});
