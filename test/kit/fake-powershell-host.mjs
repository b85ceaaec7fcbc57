// A real long-lived process standing in ONLY for the PowerShell host's transport (no
// PowerShell runs here): it speaks the host's framing, one JSON request line in, one JSON
// answer line out, matched by id, and answers from the recorded Windows fixtures. Some pids
// trigger transport faults: 1 exits, 2 never answers, 3 writes a non-JSON line, 4 answers in
// byte chunks split inside a UTF-8 character, 5 answers with a huge line, 6 answers late.
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";

const dir = process.argv[2];
const read = (name) => JSON.parse(readFileSync(new URL(name, `file://${dir}/`), "utf8"));
const out = (obj) => process.stdout.write(`${JSON.stringify(obj)}\n`);
out({ ready: true });

const rl = createInterface({ input: process.stdin });
rl.on("line", (line) => {
  const q = JSON.parse(line);
  const answer = (data) => out({ id: q.id, ok: true, data });
  if (q.op === "processes") return answer(read(process.env.FAKE_PROCESSES ?? "host-processes.json"));
  if (q.op === "tcp" && q.state === "Listen") return answer(q.pid === 7300 ? read("host-listen-backend.json") : []);
  if (q.op === "tcp") return answer(read("host-established.json"));
  if (q.op !== "detail") return out({ id: q.id, ok: false, error: `unknown op ${q.op}` });
  switch (q.pid) {
    case 1:
      return process.exit(3);
    case 2:
      return;
    case 3:
      return process.stdout.write("Add-Type : error CS0246\n");
    case 4: {
      const bytes = Buffer.from(
        `${JSON.stringify({ id: q.id, ok: true, data: read("detail-tui-private.json") })}\n`,
        "utf8",
      );
      const cut = bytes.indexOf(Buffer.from("Ö", "utf8")) + 1; // inside the two-byte Ö
      process.stdout.write(bytes.subarray(0, cut));
      setTimeout(() => process.stdout.write(bytes.subarray(cut)), 20);
      return;
    }
    case 5:
      return answer({ ProcessId: 5, Error: "read_failed", Message: "x".repeat(2 * 1024 * 1024) });
    case 6:
      return setTimeout(() => answer(read("detail-backend-private.json")), 50);
    default:
      return answer(
        q.pid === 7200
          ? read("detail-tui-private.json")
          : q.pid === 7300
            ? read("detail-backend-private.json")
            : { ProcessId: q.pid, Error: "gone", Message: "87" },
      );
  }
});
