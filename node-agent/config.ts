/** The node agent's configuration, compiled once with every default filled in. */
import { homedir, hostname } from "node:os";
import { join } from "node:path";
import { isValidName } from "../shared/ids.js";
import { InvalidArgumentError } from "../shared/errors.js";
import type { HireOptions } from "./hire/hire.js";
import { quoteInput } from "../shared/public-text.js";

export interface AgentOptions {
  stateDir: string;
  /**
   * The fleet's gateway: one or several controller agent URLs (https), each possibly a comma
   * list; from the identity when omitted after joining (ADR 0038).
   */
  controllerUrl?: string | readonly string[] | undefined;
  /** A join token: join (again) with a fresh key pair; without one, the stored identity is used. */
  joinToken?: string | undefined;
  /** When given, must match the machine of the identity. */
  machine?: string | undefined;
  /** Where seats are discovered: a pane host, or none (mailbox seats only). */
  paneHost?: string | undefined;
  herdrSocket?: string | undefined;
  /** tmux server socket (`tmux -S`); default: the user's default server. */
  tmuxSocket?: string | undefined;
  /** How often seats are re-inspected so their reported status and capabilities stay live. */
  statusRefreshMs?: number | undefined;
  env?: NodeJS.ProcessEnv | undefined;
  /** hire_agent: harness binaries, launch environment, limits. */
  hire?: HireOptions | undefined;
}

export type PaneHostConfig =
  | { kind: "none" }
  | { kind: "tmux"; socketPath: string | undefined }
  | { kind: "herdr"; socketPath: string; sessionName: string };

export interface AgentConfig {
  stateDir: string;
  mailboxDir: string;
  /** The first of controllerUrls. */
  controllerUrl: string | undefined;
  /** The gateway URLs given, in order; empty when none was (the identity's are used). */
  controllerUrls: string[];
  joinToken: string | undefined;
  machine: string | undefined;
  paneHost: PaneHostConfig;
  statusRefreshMs: number;
  hire: HireOptions;
}

export const DEFAULT_STATUS_REFRESH_MS = 5000;

export function defaultMachineName(): string {
  const name =
    hostname()
      .split(".")[0]
      ?.replace(/[^A-Za-z0-9._-]/g, "-") ?? "";
  return isValidName(name) ? name : "local";
}

/** Herdr's own resolution order: HERDR_SOCKET_PATH, then HERDR_SESSION, then the default session. */
export function defaultHerdrSocket(env: NodeJS.ProcessEnv): { socketPath: string; sessionName: string } {
  const base = join(env.HOME ?? homedir(), ".config", "herdr");
  const session = env.HERDR_SESSION;
  if (env.HERDR_SOCKET_PATH) return { socketPath: env.HERDR_SOCKET_PATH, sessionName: session ?? "default" };
  if (session) return { socketPath: join(base, "sessions", session, "herdr.sock"), sessionName: session };
  return { socketPath: join(base, "herdr.sock"), sessionName: "default" };
}

function compilePaneHost(o: AgentOptions): PaneHostConfig {
  const kind = o.paneHost ?? "none";
  if (kind === "none") return { kind };
  if (kind === "tmux") return { kind, socketPath: o.tmuxSocket };
  if (kind === "herdr") {
    const d = defaultHerdrSocket(o.env ?? process.env);
    return { kind, socketPath: o.herdrSocket ?? d.socketPath, sessionName: d.sessionName };
  }
  throw new InvalidArgumentError(`--pane-host must be tmux, herdr or none, got ${quoteInput(kind)}`);
}

export function compileAgentConfig(o: AgentOptions): AgentConfig {
  const machine = o.machine;
  const controllerUrls = parseControllerUrls(o.controllerUrl);
  if (machine !== undefined && !isValidName(machine))
    throw new InvalidArgumentError(`machine name ${quoteInput(machine)} must be 1-64 letters, digits, '.', '-' or '_'`);
  return {
    stateDir: o.stateDir,
    mailboxDir: join(o.stateDir, "mailboxes"),
    controllerUrl: controllerUrls[0],
    controllerUrls,
    joinToken: o.joinToken?.trim() || undefined,
    machine,
    paneHost: compilePaneHost(o),
    statusRefreshMs: o.statusRefreshMs ?? DEFAULT_STATUS_REFRESH_MS,
    hire: o.hire ?? {},
  };
}

/**
 * The gateway URLs of `--controller` values: repeated, or comma lists; blanks and repeats are
 * dropped, the order kept. A name that resolves to several addresses stays one URL: Node's
 * connect tries each of its addresses in turn (autoSelectFamily), and the fleet then names
 * every replica by its own URL.
 */
export function parseControllerUrls(values: string | readonly string[] | undefined): string[] {
  const list = (typeof values === "string" ? [values] : (values ?? [])).flatMap((v) => v.split(","));
  return [...new Set(list.map((u) => u.trim()).filter((u) => u.length > 0))];
}
