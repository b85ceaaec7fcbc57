/**
 * Where the Pi adapter finds each seat's live link: RPC children this agent launched are
 * held in memory by seat name (they die with the agent); a Pi TUI's extension socket is
 * dialled from the seat's control facts on demand and kept while it stays open.
 */
import { SeatKind } from "../../../shared/verdicts.js";
import type { SeatRecord } from "../adapter.js";
import type { PiLink } from "./link.js";
import type { PiLinks } from "./adapter.js";

export interface PiExtensionControl {
  transport: "extension";
  socketPath: string;
  tokenFile: string;
  sessionId?: string | undefined;
  /** The pane's foreground Pi process: the extension must be served by it (rule 3). */
  piPid?: number | undefined;
}

declare module "../adapter.js" {
  interface SeatControls {
    pi: PiExtensionControl;
  }
}

export class PiLinkBook implements PiLinks {
  private readonly launched = new Map<string, PiLink>();
  private readonly dialled = new Map<string, PiLink>();

  constructor(private readonly dial?: (control: PiExtensionControl) => Promise<PiLink>) {}

  /**
   * A `pi --mode rpc` child this agent started for `seatName`. Kept so such a link can be
   * closed with the agent, but it is never a seat's control: PiAdapter refuses it (rule 3).
   */
  addLaunched(seatName: string, link: PiLink): void {
    this.launched.set(seatName, link);
  }

  async get(seat: SeatRecord): Promise<PiLink | undefined> {
    const launched = this.launched.get(seat.name);
    if (launched) return launched;
    const c = seat.kind === SeatKind.Pi ? seat.control : undefined;
    if (c?.transport !== "extension" || !c.socketPath || !c.tokenFile || !this.dial) return undefined;
    const open = this.dialled.get(seat.name);
    if (open?.isOpen) return open;
    try {
      const link = await this.dial(c);
      this.dialled.set(seat.name, link);
      return link;
    } catch {
      return undefined;
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.launched.values(), ...this.dialled.values()].map((l) => l.close()));
  }
}
