/** Which adapter serves which seat kind. Adding a harness adds one line here. */
import type { SeatKind } from "../../shared/verdicts.js";
import type { HarnessAdapter } from "./adapter.js";

export class AdapterRegistry {
  private readonly byKind = new Map<SeatKind, HarnessAdapter>();

  register(adapter: HarnessAdapter): this {
    this.byKind.set(adapter.kind, adapter);
    return this;
  }

  get(kind: SeatKind): HarnessAdapter | undefined {
    return this.byKind.get(kind);
  }
}
