/** EnrollmentService (no certificate yet) and CertificateService (renewal over mutual TLS). */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { CertificateService, EnrollmentService, JoinResponseSchema, RenewResponseSchema } from "../../shared/gen/clankie/fleet/v1/fleet_pb.js";
import { FleetError } from "../../shared/errors.js";
import type { Logger } from "../../shared/logger.js";
import type { FleetAuthority } from "./authority.js";
import { machineOf } from "./peer-identity.js";

export function createEnrollmentService(authority: FleetAuthority, logger: Logger): ServiceImpl<typeof EnrollmentService> {
  return {
    async join(req) {
      if (!req.token || !req.csrPem) throw new ConnectError("token and csr_pem are required", Code.InvalidArgument);
      try {
        const cert = await authority.join(req.token, req.csrPem);
        logger.info("machine enrolled", { machine: cert.machine, serial: cert.serial, notAfter: cert.notAfter.toISOString(), agentVersion: req.agentVersion });
        return create(JoinResponseSchema, {
          machine: cert.machine,
          fleetId: authority.ca.fleetId,
          certificatePem: cert.certificatePem,
          caCertificatePem: authority.ca.certificatePem,
          notAfterUnixMs: BigInt(cert.notAfter.getTime()),
        });
      } catch (e) {
        logger.warn("join refused", { error: (e as Error).message });
        throw FleetError.from(e).toConnectError();
      }
    },
  };
}

export function createCertificateService(authority: FleetAuthority, logger: Logger): ServiceImpl<typeof CertificateService> {
  return {
    async renew(req, ctx) {
      const peer = machineOf(ctx);
      try {
        const cert = await authority.renew(peer.machine, req.csrPem);
        logger.info("machine certificate renewed", { machine: peer.machine, serial: cert.serial, notAfter: cert.notAfter.toISOString() });
        return create(RenewResponseSchema, { certificatePem: cert.certificatePem, notAfterUnixMs: BigInt(cert.notAfter.getTime()) });
      } catch (e) {
        throw FleetError.from(e).toConnectError();
      }
    },
  };
}
