/** The node agent's configuration, compiled once with every default filled in. */
import { hostname } from "node:os";
import { join } from "node:path";
import { isValidName } from "../shared/ids.js";
import { InvalidArgumentError } from "../shared/errors.js";

export interface AgentOptions {
  stateDir: string;
  controllerUrl: string;
  fleetToken: string;
  machine?: string | undefined;
  host?: string | undefined;
  port?: number | undefined;
}

export interface AgentConfig {
  stateDir: string;
  mailboxDir: string;
  controllerUrl: string;
  fleetToken: string;
  machine: string;
  host: string;
  port: number;
}

export function defaultMachineName(): string {
  const name = hostname().split(".")[0]?.replace(/[^A-Za-z0-9._-]/g, "-") ?? "";
  return isValidName(name) ? name : "local";
}

export function compileAgentConfig(o: AgentOptions): AgentConfig {
  const machine = o.machine ?? defaultMachineName();
  if (!isValidName(machine)) throw new InvalidArgumentError(`machine name ${JSON.stringify(machine)} must be 1-64 letters, digits, '.', '-' or '_'`);
  return {
    stateDir: o.stateDir,
    mailboxDir: join(o.stateDir, "mailboxes"),
    controllerUrl: o.controllerUrl,
    fleetToken: o.fleetToken,
    machine,
    host: o.host ?? "127.0.0.1",
    port: o.port ?? 0,
  };
}
