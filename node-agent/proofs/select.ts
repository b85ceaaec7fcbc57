/**
 * Picks the proof provider for this machine by `process.platform`: one registry line per
 * platform (Nomad's fingerprint registry), and an explicit unsupported provider otherwise.
 * systeminformation is deliberately not a fallback: it forks ps/netstat for 30-50 ms and
 * caches for 500 ms (stack spike §7), and every platform we serve has a direct source.
 */
import { systemMonotonicClock, type MonotonicClock } from "./proof.js";
import type { ProofProvider } from "./provider.js";
import { LinuxProofProvider } from "./linux.js";
import { DarwinProofProvider } from "./darwin.js";
import { WindowsProofProvider } from "./windows.js";
import { PowerShellHost } from "./windows-host.js";
import { powerShellHostArgs } from "./windows-host-script.js";
import { UnsupportedProofProvider } from "./unsupported.js";

const providers: Record<string, (clock: MonotonicClock) => ProofProvider> = {
  linux: (clock) => new LinuxProofProvider(clock),
  darwin: (clock) => new DarwinProofProvider(clock),
  // One PowerShell host for the agent's life: no proof starts a process (windows-host.ts).
  win32: (clock) => {
    const host = new PowerShellHost({ file: "powershell.exe", args: powerShellHostArgs() });
    return new WindowsProofProvider(host.ask, clock, process.pid, () => host.close());
  },
};

export function selectProofProvider(
  platform: string = process.platform,
  clock: MonotonicClock = systemMonotonicClock,
): ProofProvider {
  const create = providers[platform];
  return create ? create(clock) : new UnsupportedProofProvider(platform, clock);
}
