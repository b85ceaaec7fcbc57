/**
 * Keeps the agent's certificate current: renews it over mutual TLS once half its life has
 * passed (a new key pair each time), retries with backoff while the controller is away,
 * and tells the links to use the new one. The owner never has to step in while the
 * agent can reach a controller before its certificate expires. It also keeps the list of
 * gateway URLs on disk current with the live replicas the fleet names (ADR 0038).
 */
import { EventEmitter } from "node:events";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { CertificateService, RenewRequestSchema } from "../../shared/gen/clankie/fleet/v1/fleet_pb.js";
import { createCsr, generateKeyPair, certificateNotAfter } from "../../shared/pki/x509.js";
import type { Logger } from "../../shared/logger.js";
import { saveIdentity, writeIdentityRecord, type AgentIdentity } from "./identity-files.js";
import { X509Certificate } from "node:crypto";

export interface TlsMaterial {
  ca: string[];
  cert: string;
  key: string;
}

export class IdentityKeeper extends EventEmitter<{ renewed: [AgentIdentity] }> {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private current: AgentIdentity,
    private readonly stateDir: string,
    private readonly logger: Logger,
  ) {
    super();
  }

  get identity(): AgentIdentity {
    return this.current;
  }

  tls(): TlsMaterial {
    return { ca: [this.current.caCertificatePem], cert: this.current.certificatePem, key: this.current.privateKeyPem };
  }

  /**
   * The gateway URLs to try, best first: written to disk when they changed, so a restart
   * reaches a live replica while the one it joined through is dead.
   */
  rememberControllerUrls(urls: string[]): void {
    const next = [...new Set(urls)];
    if (next.length === 0 || next.join("\n") === this.current.controllerUrls.join("\n")) return;
    this.current = { ...this.current, controllerUrls: next };
    try {
      writeIdentityRecord(this.stateDir, this.current);
    } catch (e) {
      this.logger.warn("the controller URLs could not be saved; a restart uses the old list", {
        error: (e as Error).message,
      });
    }
  }

  start(): void {
    this.schedule(this.renewDelayMs());
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** Half of the certificate's life from its start, measured from now. */
  renewDelayMs(): number {
    const cert = new X509Certificate(this.current.certificatePem);
    const from = new Date(cert.validFrom).getTime();
    const to = this.current.notAfter.getTime();
    return Math.max(0, from + (to - from) / 2 - Date.now());
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.renew(1000), Math.min(ms, 2 ** 31 - 1));
    this.timer.unref();
  }

  async renew(backoffMs = 1000): Promise<void> {
    try {
      const { keys, privateKeyPem } = await generateKeyPair();
      const csrPem = await createCsr(this.current.machine, keys);
      // Any replica renews (they share the CA); one that does not answer is left for the next.
      let res;
      let last: unknown;
      for (const baseUrl of this.current.controllerUrls) {
        try {
          // One call: its session closes once idle, not 15 min later (Connect's default).
          const transport = createGrpcTransport({ baseUrl, nodeOptions: this.tls(), idleConnectionTimeoutMs: 1_000 });
          res = await createClient(CertificateService, transport).renew(create(RenewRequestSchema, { csrPem }), {
            timeoutMs: 10_000,
          });
          break;
        } catch (e) {
          last = e;
        }
      }
      if (!res) throw last;
      const next = {
        ...this.current,
        privateKeyPem,
        certificatePem: res.certificatePem,
        notAfter: certificateNotAfter(res.certificatePem),
      };
      saveIdentity(this.stateDir, next);
      this.current = next;
      this.logger.info("machine certificate renewed", { machine: next.machine, notAfter: next.notAfter.toISOString() });
      this.emit("renewed", next);
      this.schedule(this.renewDelayMs());
    } catch (e) {
      const left = this.current.notAfter.getTime() - Date.now();
      this.logger.warn("certificate renewal failed; retrying", {
        error: (e as Error).message,
        retryInMs: backoffMs,
        expiresInMs: left,
      });
      if (this.stopped) return;
      this.timer = setTimeout(() => void this.renew(Math.min(backoffMs * 2, 60_000)), backoffMs);
      this.timer.unref();
    }
  }
}
