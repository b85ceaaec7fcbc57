/**
 * Host-key checking against an OpenSSH known_hosts file, as `StrictHostKeyChecking
 * accept-new` does: a known host must present the recorded key (a changed key is always
 * refused), an unknown one is refused unless the owner asked to accept new keys, in which case
 * it is appended. Hashed entries (|1|salt|hmac) and [host]:port patterns are understood.
 */
import { createHmac } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { FleetError, ErrorCode } from "../../shared/errors.js";

export type HostKeyVerdict =
  | { kind: "known" }
  | { kind: "added" }
  | { kind: "unknown" }
  | { kind: "changed"; expected: string }
  | { kind: "revoked" };

function keyType(blob: Buffer): string {
  const len = blob.readUInt32BE(0);
  return blob.subarray(4, 4 + len).toString("latin1");
}

export function hostPattern(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

function matches(field: string, name: string): boolean {
  if (field.startsWith("|1|")) {
    const [, , salt, hash] = field.split("|");
    if (!salt || !hash) return false;
    return createHmac("sha1", Buffer.from(salt, "base64")).update(name).digest("base64") === hash;
  }
  return field.split(",").includes(name);
}

export function checkHostKey(
  file: string,
  host: string,
  port: number,
  blob: Buffer,
  acceptNew: boolean,
): HostKeyVerdict {
  const name = hostPattern(host, port);
  const type = keyType(blob);
  const b64 = blob.toString("base64");
  const lines = existsSync(file) ? readFileSync(file, "utf8").split("\n") : [];
  let sameType: string | undefined;
  for (const raw of lines) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const parts = line.split(/\s+/);
    const marker = parts[0]!.startsWith("@") ? parts.shift() : undefined;
    const [hosts, t, key] = parts;
    if (!hosts || !t || !key || !matches(hosts, name)) continue;
    if (marker === "@revoked" && key === b64) return { kind: "revoked" };
    if (marker) continue;
    if (t === type && key === b64) return { kind: "known" };
    if (t === type) sameType = key;
  }
  if (sameType) return { kind: "changed", expected: sameType };
  if (!acceptNew) return { kind: "unknown" };
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  appendFileSync(file, `${name} ${type} ${b64}\n`, { mode: 0o600 });
  return { kind: "added" };
}

export function hostKeyError(v: HostKeyVerdict, host: string, port: number, file: string): FleetError | undefined {
  const name = hostPattern(host, port);
  if (v.kind === "changed")
    return new FleetError(
      ErrorCode.PermissionDenied,
      `HOST KEY CHANGED for ${name}: it does not match ${file}. Someone may be intercepting the connection; nothing was sent. If the host really was reinstalled, remove its line from ${file} yourself.`,
    );
  if (v.kind === "revoked")
    return new FleetError(
      ErrorCode.PermissionDenied,
      `the host key of ${name} is marked @revoked in ${file}; nothing was sent`,
    );
  if (v.kind === "unknown")
    return new FleetError(
      ErrorCode.PermissionDenied,
      `${name} is not in ${file}; check its host key and rerun with --accept-new to add it`,
    );
  return undefined;
}
