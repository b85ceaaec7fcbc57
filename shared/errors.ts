/**
 * One error family for the whole fleet: every error has a stable `name`, a snake_case
 * `code`, and a `retryable` flag. `FleetError.from` types any throw at a boundary.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { publicErrorText } from "./public-text.js";

export const ErrorCode = {
  InvalidArgument: "invalid_argument",
  Unauthenticated: "unauthenticated",
  PermissionDenied: "permission_denied",
  NotFound: "not_found",
  UnknownSeat: "unknown_seat",
  JournalUnavailable: "journal_unavailable",
  DatabaseUnreachable: "database_unreachable",
  StateDirLocked: "state_dir_locked",
  AgentUnreachable: "agent_unreachable",
  ServiceStopping: "service_stopping",
  ReceiptInUse: "receipt_in_use",
  ReceiptConflict: "receipt_conflict",
  FailedPrecondition: "failed_precondition",
  AlreadyExists: "already_exists",
  Unimplemented: "unimplemented",
  AddressInUse: "address_in_use",
  ControllerUnreachable: "controller_unreachable",
  /** A host to install on (fleet deploy's SSH target) does not answer. */
  HostUnreachable: "host_unreachable",
  /** Not ready to serve this yet (an agent still starting); nothing was done, try again. */
  Unavailable: "unavailable",
  /** The fleet owner revoked (or removed) this machine: its certificate is refused for good. */
  MachineRevoked: "machine_revoked",
  Internal: "internal",
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

const KNOWN_CODES: ReadonlySet<string> = new Set(Object.values(ErrorCode));

export class FleetError extends Error {
  override readonly name: string = "FleetError";
  readonly code: ErrorCode;
  readonly retryable: boolean;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown; retryable?: boolean }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retryable = options?.retryable ?? false;
  }

  /** Types any thrown value; a FleetError passes through unchanged. */
  static from(reason: unknown): FleetError {
    if (reason instanceof FleetError) return reason;
    if (reason instanceof ConnectError) {
      // Our own errors cross the wire as "<code>: <message>": keep the exact code, once.
      const ours = /^([a-z_]+): ([\s\S]*)$/.exec(reason.rawMessage);
      if (ours && KNOWN_CODES.has(ours[1]!)) return new FleetError(ours[1] as ErrorCode, ours[2]!, { cause: reason });
      return new FleetError(fromConnectCode(reason.code), reason.rawMessage, { cause: reason });
    }
    const message = reason instanceof Error ? reason.message : String(reason);
    // A port someone else holds is the user's to fix, not an internal fault.
    if ((reason as NodeJS.ErrnoException | undefined)?.code === "EADDRINUSE")
      return new FleetError(
        ErrorCode.AddressInUse,
        `${message}: another process is listening there; stop it or choose another --port`,
        { cause: reason },
      );
    return new FleetError(ErrorCode.Internal, message, { cause: reason });
  }

  /** The single mapping from our codes to gRPC/Connect codes. */
  toConnectError(): ConnectError {
    return new ConnectError(
      `${this.code}: ${publicErrorText(this.message)}`,
      toConnectCode(this.code),
      undefined,
      undefined,
      this,
    );
  }
}

export class InvalidArgumentError extends FleetError {
  override readonly name = "InvalidArgumentError";
  constructor(message: string) {
    super(ErrorCode.InvalidArgument, message);
  }
}

export class UnauthenticatedError extends FleetError {
  override readonly name = "UnauthenticatedError";
  constructor(message = "missing or wrong bearer token") {
    super(ErrorCode.Unauthenticated, message);
  }
}

export class JournalUnavailableError extends FleetError {
  override readonly name = "JournalUnavailableError";
  constructor(message: string, cause?: unknown) {
    super(ErrorCode.JournalUnavailable, message, { cause, retryable: true });
  }
}

export class DatabaseUnreachableError extends FleetError {
  override readonly name = "DatabaseUnreachableError";
  constructor(message: string, cause?: unknown) {
    super(ErrorCode.DatabaseUnreachable, message, { cause, retryable: true });
  }
}

export class StateDirLockedError extends FleetError {
  override readonly name = "StateDirLockedError";
  constructor(message: string) {
    super(ErrorCode.StateDirLocked, message);
  }
}

export class ServiceStoppingError extends FleetError {
  override readonly name = "ServiceStoppingError";
  constructor() {
    super(ErrorCode.ServiceStopping, "the controller is stopping; nothing was dispatched", { retryable: true });
  }
}

function toConnectCode(code: ErrorCode): Code {
  switch (code) {
    case ErrorCode.InvalidArgument:
      return Code.InvalidArgument;
    case ErrorCode.Unauthenticated:
      return Code.Unauthenticated;
    case ErrorCode.PermissionDenied:
    case ErrorCode.MachineRevoked:
      return Code.PermissionDenied;
    case ErrorCode.NotFound:
    case ErrorCode.UnknownSeat:
      return Code.NotFound;
    case ErrorCode.ReceiptInUse:
    case ErrorCode.ReceiptConflict:
      return Code.AlreadyExists;
    case ErrorCode.JournalUnavailable:
    case ErrorCode.DatabaseUnreachable:
    case ErrorCode.AgentUnreachable:
    case ErrorCode.ServiceStopping:
      return Code.Unavailable;
    case ErrorCode.StateDirLocked:
    case ErrorCode.FailedPrecondition:
    case ErrorCode.AddressInUse:
      return Code.FailedPrecondition;
    case ErrorCode.AlreadyExists:
      return Code.AlreadyExists;
    case ErrorCode.Unimplemented:
      return Code.Unimplemented;
    case ErrorCode.ControllerUnreachable:
    case ErrorCode.HostUnreachable:
    case ErrorCode.Unavailable:
      return Code.Unavailable;
    default:
      return Code.Internal;
  }
}

function fromConnectCode(code: Code): ErrorCode {
  switch (code) {
    case Code.InvalidArgument:
      return ErrorCode.InvalidArgument;
    case Code.Unauthenticated:
      return ErrorCode.Unauthenticated;
    case Code.PermissionDenied:
      return ErrorCode.PermissionDenied;
    case Code.NotFound:
      return ErrorCode.NotFound;
    case Code.AlreadyExists:
      return ErrorCode.ReceiptConflict;
    case Code.Unavailable:
      return ErrorCode.AgentUnreachable;
    default:
      return ErrorCode.Internal;
  }
}

/** Codes the agent raises only before touching the seat: the message was not written. */
const REFUSED_BEFORE_WRITE = new Set([
  Code.InvalidArgument,
  Code.Unauthenticated,
  Code.PermissionDenied,
  Code.NotFound,
  Code.FailedPrecondition,
  Code.Unimplemented,
]);

/** A failed call to a node agent, typed for the pipeline: whether it was refused before any write. */
export class AgentCallError extends FleetError {
  override readonly name = "AgentCallError";
  constructor(
    message: string,
    /** The gRPC code's name (Unavailable, DeadlineExceeded, …), for the lead's detail. */
    readonly grpcCode: string,
    /** The agent refused before it could have written anything. */
    readonly refusedBeforeWrite: boolean,
    cause: unknown,
  ) {
    super(refusedBeforeWrite ? fromConnectCode(Code.InvalidArgument) : ErrorCode.AgentUnreachable, message, { cause });
  }
}

/** Types any throw of an agent client call; the only place the pipeline meets the RPC library's errors. */
export function agentCallError(e: unknown): AgentCallError {
  const err = ConnectError.from(e);
  return new AgentCallError(err.rawMessage, Code[err.code] ?? String(err.code), REFUSED_BEFORE_WRITE.has(err.code), e);
}
