/**
 * The legacy peer path the node agent replaces (inventory §3 item 6): one SSH exec round trip
 * per proof read — sender proof, recipient proof, process proof — and one for the write, on
 * one warm connection (the old system kept SSH control masters open). The message travels on
 * stdin, never in the command line; the delivery id is a UUID we minted.
 */
import ssh2 from "ssh2";
import type { ClientChannel } from "ssh2";

export interface SshTarget {
  host: string;
  port: number;
  username: string;
  privateKey: string;
  /** Directory on the ssh side that plays the recipient's inbox. */
  inbox: string;
  /** A process of the ssh user whose /proc entry the proofs read. */
  subjectPid: number;
}

export interface LegacyDelivery {
  ok: boolean;
  /** Age of the oldest proof when the write began, as the old gate would have judged it. */
  proofAgeMs: number;
}

export interface LegacySsh {
  deliver(deliveryId: string, message: string): Promise<LegacyDelivery>;
  close(): void;
}

function exec(
  conn: ssh2.Client,
  command: string,
  stdin?: string,
): Promise<{ code: number | undefined; stdout: string }> {
  return new Promise((resolve, reject) => {
    conn.exec(command, (err: Error | undefined, stream: ClientChannel) => {
      if (err) return reject(err);
      let stdout = "";
      let code: number | undefined;
      stream.on("data", (d: Buffer) => (stdout += d.toString()));
      stream.stderr.on("data", () => {});
      stream.on("exit", (c: number | null) => (code = c ?? undefined));
      stream.on("close", () => resolve({ code, stdout }));
      stream.end(stdin ?? "");
    });
  });
}

export async function connectLegacy(t: SshTarget): Promise<LegacySsh> {
  const conn = new ssh2.Client();
  await new Promise<void>((resolve, reject) => {
    conn.once("ready", () => resolve());
    conn.once("error", reject);
    conn.connect({ host: t.host, port: t.port, username: t.username, privateKey: t.privateKey, readyTimeout: 15_000 });
  });
  // ssh2 leaves Nagle on; without this each exec costs 40+ ms more (stack spike §6).
  (conn as unknown as { setNoDelay(on: boolean): void }).setNoDelay(true);
  const proc = `/proc/${t.subjectPid}`;
  const proofs = [
    // sender proof: the sending process is who it claims to be (its stat line: pid, start time)
    `cat ${proc}/stat`,
    // recipient proof: the recipient's inbox exists and is the same directory (inode)
    `test -d '${t.inbox}' && stat -c %i '${t.inbox}'`,
    // process proof: the process still holds its descriptors (the old tuple check, cut down)
    `ls ${proc}/fd | wc -l`,
  ];
  return {
    async deliver(deliveryId, message) {
      const completed: number[] = [];
      for (const cmd of proofs) {
        const r = await exec(conn, cmd);
        if (r.code !== 0) return { ok: false, proofAgeMs: Number.NaN };
        completed.push(performance.now());
      }
      const proofAgeMs = performance.now() - completed[0]!;
      const file = `'${t.inbox}/${deliveryId}.json'`;
      const body = JSON.stringify({ deliveryId, text: message, receivedAt: new Date().toISOString() });
      // As durable as the agent's mailbox file: temp file, fsync, rename, fsync the directory.
      const w = await exec(
        conn,
        `f=${file}; cat > "$f.tmp" && sync "$f.tmp" && mv "$f.tmp" "$f" && sync '${t.inbox}'`,
        body,
      );
      return { ok: w.code === 0, proofAgeMs };
    },
    close: () => conn.end(),
  };
}
