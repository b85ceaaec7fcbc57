/** One SSH connection (ssh2) for a deploy: host key checked first, commands with stdin, SFTP upload. */
import { readFileSync } from "node:fs";
import ssh2 from "ssh2";
import { FleetError, ErrorCode } from "../../shared/errors.js";
import { checkHostKey, hostKeyError, type HostKeyVerdict } from "./known-hosts.js";

export interface SshTarget {
  host: string;
  port: number;
  username: string;
}

export function parseTarget(text: string, port: number | undefined, defaultUser: string): SshTarget {
  const m = /^(?:([^@\s]+)@)?(\[[^\]]+\]|[^:@\s]+)(?::(\d+))?$/.exec(text);
  if (!m)
    throw new FleetError(
      ErrorCode.InvalidArgument,
      `SSH_TARGET must be [user@]host[:port], got ${JSON.stringify(text)}`,
    );
  return {
    username: m[1] ?? defaultUser,
    host: m[2]!.replace(/^\[|\]$/g, ""),
    port: port ?? (m[3] ? Number(m[3]) : 22),
  };
}

/** No agent is involved yet: the SSH host does not answer (host_unreachable), or refuses the key (permission_denied). */
function sshError(t: SshTarget, identityFile: string, e: Error & { level?: string }): FleetError {
  const where = `ssh ${t.username}@${t.host}:${t.port}`;
  if (e.level === "client-authentication")
    return new FleetError(
      ErrorCode.PermissionDenied,
      `${where} refused the key ${identityFile} (${e.message}); is its public key in ${t.username}'s authorized_keys there?`,
    );
  return new FleetError(ErrorCode.HostUnreachable, `${where}: ${e.message}`);
}

export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface SshSession {
  readonly hostKey: HostKeyVerdict;
  exec(command: string, stdin?: string): Promise<ExecResult>;
  upload(local: string, remote: string): Promise<void>;
  /** Writes a file whole over SFTP (where no POSIX `cat >` exists: Windows). */
  writeFile(remote: string, content: string): Promise<void>;
  close(): void;
}

export async function openSsh(
  t: SshTarget,
  o: { identityFile: string; knownHosts: string; acceptNew: boolean; timeoutMs?: number },
): Promise<SshSession> {
  const client = new ssh2.Client();
  let verdict: HostKeyVerdict = { kind: "unknown" };
  let refusal: FleetError | undefined;
  let privateKey: Buffer;
  try {
    privateKey = readFileSync(o.identityFile);
  } catch (e) {
    throw new FleetError(
      ErrorCode.InvalidArgument,
      `cannot read the SSH identity ${o.identityFile}: ${(e as Error).message}`,
    );
  }
  await new Promise<void>((resolve, reject) => {
    client.once("ready", () => resolve());
    client.once("error", (e: Error & { level?: string }) => reject(refusal ?? sshError(t, o.identityFile, e)));
    client.connect({
      host: t.host,
      port: t.port,
      username: t.username,
      privateKey,
      readyTimeout: o.timeoutMs ?? 20_000,
      hostVerifier: (key: Buffer) => {
        verdict = checkHostKey(o.knownHosts, t.host, t.port, key, o.acceptNew);
        refusal = hostKeyError(verdict, t.host, t.port, o.knownHosts);
        return !refusal;
      },
    });
  });
  return {
    get hostKey() {
      return verdict;
    },
    exec: (command, stdin) =>
      new Promise<ExecResult>((resolve, reject) => {
        client.exec(command, (err, stream) => {
          if (err) return reject(err);
          let stdout = "";
          let stderr = "";
          stream.on("data", (d: Buffer) => (stdout += d.toString("utf8")));
          stream.stderr.on("data", (d: Buffer) => (stderr += d.toString("utf8")));
          stream.once("close", (code: number | null) => resolve({ code: code ?? -1, stdout, stderr }));
          // Secrets (the join token) travel here, on the channel's stdin, never in the command.
          if (stdin !== undefined) stream.end(stdin);
          else stream.end();
        });
      }),
    upload: (local, remote) =>
      new Promise<void>((resolve, reject) => {
        client.sftp((err, sftp) => {
          if (err) return reject(err);
          sftp.fastPut(local, remote, (e) => {
            sftp.end();
            if (e) reject(e);
            else resolve();
          });
        });
      }),
    writeFile: (remote, content) =>
      new Promise<void>((resolve, reject) => {
        client.sftp((err, sftp) => {
          if (err) return reject(err);
          sftp.writeFile(remote, content, (e) => {
            sftp.end();
            if (e) reject(e);
            else resolve();
          });
        });
      }),
    close: () => client.end(),
  };
}
