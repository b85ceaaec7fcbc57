/** The Pi harness: its extension-link adapter with discovery, and its hire launcher. */
import { SeatKind } from "../../../shared/verdicts.js";
import type { HarnessPlugin } from "../plugin.js";
import { PiAdapter } from "./adapter.js";
import { createPiDiscover, dialPiExtension } from "./extension-link.js";
import { PiLauncher } from "./launch.js";
import { PiLinkBook } from "./links.js";

export const piHarness: HarnessPlugin = {
  kind: SeatKind.Pi,
  hire: true,
  start(s) {
    const links = new PiLinkBook((c) => dialPiExtension(c));
    const adapter = new PiAdapter({ clock: s.clock, links, paneHost: s.paneHost });
    // A Pi TUI runs the Clankie extension with CLANKIE_PI_SOCKET_DIR set to this folder.
    adapter.discover = createPiDiscover(s.folders.piSocketDir);
    return { adapter, launcher: new PiLauncher(), close: () => links.close() };
  },
};
