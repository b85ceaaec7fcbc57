/** Identifiers: delivery ids are UUIDs; seat ids are "<machine>/<seat name>". */
import { randomUUID } from "node:crypto";
import { InvalidArgumentError } from "./errors.js";
import { quoteInput } from "./public-text.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function newDeliveryId(): string {
  return randomUUID();
}

export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/**
 * A UUID as it is fingerprinted, stored, compared and used as a file name: lower case, since
 * RFC 9562 makes UUIDs case-insensitive on input (issue 32 item 4: one id, one delivery).
 * Undefined when `value` is not a UUID.
 */
export function canonicalUuid(value: string): string | undefined {
  return UUID.test(value) ? value.toLowerCase() : undefined;
}

/** The canonical form of a UUID a lead, worker or owner gave, or a typed refusal naming `what`. */
export function parseUuid(what: string, value: string): string {
  const id = canonicalUuid(value);
  if (id === undefined) throw new InvalidArgumentError(`${what} must be a UUID, got ${quoteInput(value)}`);
  return id;
}

/** parseUuid for an optional id: undefined stays undefined. */
export function parseOptionalUuid(what: string, value: string | undefined): string | undefined {
  return value === undefined ? undefined : parseUuid(what, value);
}

/** An id that may be a UUID but need not be (inReplyTo, an event id): canonical when it is one. */
export function canonicalRef(value: string): string {
  return canonicalUuid(value) ?? value;
}

/** A machine or seat name: letters, digits, dot, dash, underscore; at most 64. */
export function isValidName(value: string): boolean {
  return NAME.test(value);
}

export function assertValidName(what: string, value: string): void {
  if (!isValidName(value)) {
    throw new InvalidArgumentError(
      `${what} must be 1 to 64 letters, digits, dots, dashes or underscores, starting with a letter or digit; got ${quoteInput(value)}`,
    );
  }
}

/** A seat as a lead names it: "machine/name" or a bare name; anything else (a NUL, a space) is refused early. */
export function assertSeatRef(what: string, value: string): void {
  if (isValidName(value) || parseSeatId(value) !== undefined) return;
  const nul = value.includes("\u0000") ? " (a NUL byte is never part of a name)" : "";
  const rule = '"machine/name" or a seat name (1 to 64 letters, digits, dots, dashes or underscores)';
  throw new InvalidArgumentError(`${what} must be ${rule}; got ${quoteInput(value)}${nul}`);
}

export function seatId(machine: string, seatName: string): string {
  return `${machine}/${seatName}`;
}

export function parseSeatId(id: string): { machine: string; name: string } | undefined {
  const slash = id.indexOf("/");
  if (slash <= 0) return undefined;
  const machine = id.slice(0, slash);
  const name = id.slice(slash + 1);
  return isValidName(machine) && isValidName(name) ? { machine, name } : undefined;
}
