/** Identifiers: delivery ids are UUIDs; seat ids are "<machine>/<seat name>". */
import { randomUUID } from "node:crypto";
import { InvalidArgumentError } from "./errors.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function newDeliveryId(): string {
  return randomUUID();
}

export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/** A machine or seat name: letters, digits, dot, dash, underscore; at most 64. */
export function isValidName(value: string): boolean {
  return NAME.test(value);
}

export function assertValidName(what: string, value: string): void {
  if (!isValidName(value)) {
    throw new InvalidArgumentError(`${what} must be 1 to 64 letters, digits, dots, dashes or underscores, starting with a letter or digit; got ${JSON.stringify(value)}`);
  }
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
