/** A hired OpenCode server is password-protected: discovery names its password file, by the server's port. */
import { existsSync } from "node:fs";
import { SeatKind } from "../../../shared/verdicts.js";
import type { SeatRecord } from "../adapter.js";
import type { PaneInfo, PaneProcessInfo } from "../../panes/pane-host.js";
import { openCodePasswordFile } from "./launch.js";

type Discover = (pane: PaneInfo, processes: PaneProcessInfo) => Promise<SeatRecord | undefined>;

export function withHiredOpenCodePassword(discover: Discover, passwordDir: string): Discover {
  return async (pane, processes) => {
    const rec = await discover(pane, processes);
    if (rec?.kind !== SeatKind.OpenCode || typeof rec.control?.baseUrl !== "string") return rec;
    const baseUrl = rec.control.baseUrl;
    const port = /:(\d+)$/.exec(baseUrl)?.[1];
    const file = port ? openCodePasswordFile(passwordDir, port) : undefined;
    return file && existsSync(file) ? { ...rec, control: { ...rec.control, passwordFile: file } } : rec;
  };
}
