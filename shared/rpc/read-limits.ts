/**
 * The most bytes each Connect/gRPC service reads for one request message (connect-node's
 * readMaxBytes). Sized from the contract: owner and status requests are names and ids; the
 * gateway carries a machine's seat list and worker reports; health names one service.
 */
export const RPC_READ_MAX_BYTES = {
  default: 64 * 1024,
  owner: 64 * 1024,
  status: 16 * 1024,
  health: 4 * 1024,
  gateway: 1024 * 1024,
  /** EnrollmentService on the agent port, the one route served without a certificate: a token, a CSR, a version. */
  enrollment: 64 * 1024,
  /** The node agent's AgentService: one message (≤ MAX_MESSAGE_CHARS) plus its envelope. */
  agent: 1024 * 1024,
} as const;
