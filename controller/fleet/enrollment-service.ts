/** EnrollmentService (no certificate yet) and CertificateService (renewal over mutual TLS). */
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type CertificateService,
  type EnrollmentService,
  JoinResponseSchema,
  RenewResponseSchema,
} from "../../shared/gen/clankie/fleet/v1/fleet_pb.js";
import { InvalidArgumentError } from "../../shared/errors.js";
import type { Logger } from "../../shared/logger.js";
import type { FleetAuthority } from "./authority.js";
import { machineOf } from "./peer-identity.js";

export function createEnrollmentService(
  authority: FleetAuthority,
  logger: Logger,
): ServiceImpl<typeof EnrollmentService> {
  return {
    async join(req) {
      if (!req.token || !req.csrPem) throw new InvalidArgumentError("token and csr_pem are required");
      try {
        const cert = await authority.join(req.token, req.csrPem);
        logger.info("machine enrolled", {
          machine: cert.machine,
          serial: cert.serial,
          notAfter: cert.notAfter.toISOString(),
          agentVersion: req.agentVersion,
        });
        return create(JoinResponseSchema, {
          machine: cert.machine,
          fleetId: authority.ca.fleetId,
          certificatePem: cert.certificatePem,
          caCertificatePem: authority.ca.certificatePem,
          notAfterUnixMs: BigInt(cert.notAfter.getTime()),
        });
      } catch (e) {
        // Typed at the boundary (fleetErrorBoundary on the enrollment adapter), like every service's.
        logger.warn("join refused", { error: (e as Error).message });
        throw e;
      }
    },
  };
}

export function createCertificateService(
  authority: FleetAuthority,
  logger: Logger,
): ServiceImpl<typeof CertificateService> {
  return {
    async renew(req, ctx) {
      const peer = machineOf(ctx);
      const cert = await authority.renew(peer.machine, req.csrPem);
      logger.info("machine certificate renewed", {
        machine: peer.machine,
        serial: cert.serial,
        notAfter: cert.notAfter.toISOString(),
      });
      return create(RenewResponseSchema, {
        certificatePem: cert.certificatePem,
        notAfterUnixMs: BigInt(cert.notAfter.getTime()),
      });
    },
  };
}
