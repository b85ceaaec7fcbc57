/**
 * Starts every registered harness for this agent: the folders their channels use under the
 * agent's state dir, each plugin's adapter (registered for its seat kind) and hire launcher.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { SeatKind } from "../../shared/verdicts.js";
import type { HarnessLauncher } from "../hire/launcher.js";
import type { HarnessFolders, HarnessPlugin, HarnessSetup, StartedHarness } from "./plugin.js";
import { AdapterRegistry, HARNESSES } from "./registry.js";

export interface NativeAdapters {
  adapters: AdapterRegistry;
  /** The hire launcher of each harness that has one. */
  launchers: Map<SeatKind, HarnessLauncher>;
  folders: HarnessFolders;
  close(): Promise<void>;
}

export type NativeAdapterOptions = Omit<HarnessSetup, "folders"> & { stateDir: string };

function folder(...parts: string[]): string {
  const dir = join(...parts);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

export function createNativeAdapters(
  o: NativeAdapterOptions,
  plugins: readonly HarnessPlugin[] = HARNESSES,
): NativeAdapters {
  const folders: HarnessFolders = {
    claudeChannelDir: folder(o.stateDir, "claude", "channels"),
    claudeReportDir: folder(o.stateDir, "claude", "sessions"),
    piSocketDir: folder(o.stateDir, "pi", "sockets"),
    openCodePasswordDir: join(o.stateDir, "opencode", "passwords"),
  };
  const started: StartedHarness[] = plugins.map((p) => p.start({ ...o, folders }));
  const adapters = new AdapterRegistry();
  const launchers = new Map<SeatKind, HarnessLauncher>();
  for (const h of started) {
    adapters.register(h.adapter);
    if (h.launcher) launchers.set(h.adapter.kind, h.launcher);
  }
  return {
    adapters,
    launchers,
    folders,
    close: async () => {
      await Promise.all(started.map((h) => h.close?.()));
    },
  };
}
