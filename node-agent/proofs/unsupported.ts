/**
 * The proof provider for a platform with no implementation: every fact is `unknown` with
 * reason `unsupported` and names the platform, never an empty answer that could read as
 * "no listeners" or "no peers" (Tailscale's netstat_noimpl pattern).
 */
import { systemMonotonicClock, type MonotonicClock } from "./proof.js";
import {
  fact,
  type Ancestry,
  type CommandLine,
  type ConnectionPeer,
  type Fact,
  type ForegroundGroup,
  type HomeFact,
  type ListenerSet,
  type ProcessEntry,
  type ProcessIdentity,
  type ProofProvider,
  type UnixConnectionPeer,
} from "./provider.js";

export class UnsupportedProofProvider implements ProofProvider {
  constructor(
    readonly platform: string,
    private readonly clock: MonotonicClock = systemMonotonicClock,
  ) {}

  private no<T>(what: string): Promise<Fact<T>> {
    return Promise.resolve(
      fact.unknown<T>("unsupported", `${what} is not implemented on ${this.platform}`, this.clock.nowMs()),
    );
  }

  identify(): Promise<Fact<ProcessEntry>> {
    return this.no("process identity");
  }
  commandLine(): Promise<Fact<CommandLine>> {
    return this.no("a process's command line");
  }
  cwd(): Promise<Fact<string>> {
    return this.no("a process's working directory");
  }
  environment(): Promise<Fact<ReadonlyMap<string, string>>> {
    return this.no("a process's environment");
  }
  processes(): Promise<Fact<ProcessEntry[]>> {
    return this.no("the process table");
  }
  groupMembers(): Promise<Fact<ProcessEntry[]>> {
    return this.no("a process group's members");
  }
  ancestry(): Promise<Fact<Ancestry>> {
    return this.no("process ancestry");
  }
  foregroundGroup(): Promise<Fact<ForegroundGroup>> {
    return this.no("the terminal's foreground group");
  }
  home(): Promise<Fact<HomeFact>> {
    return this.no("a process's home");
  }
  listeners(): Promise<Fact<ListenerSet>> {
    return this.no("a process's listeners");
  }
  connectionPeer(): Promise<Fact<ConnectionPeer>> {
    return this.no("a connection's peer process");
  }
  unixConnectionPeer(): Promise<Fact<UnixConnectionPeer>> {
    return this.no("a unix-socket connection's peer process");
  }
  unixConnections(): Promise<Fact<{ peerPath: string; peers: ProcessIdentity[] }[]>> {
    return this.no("a process's unix-socket connections");
  }
}
