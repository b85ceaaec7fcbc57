/** `clankie mcp [--url U[,U2...]]... [--token-file F] [--conversation C]`: the lead's stdio bridge (bridge/). */
import type { Logger } from "../shared/logger.js";

/** The bridge's version as it introduces itself (the package's). */
const BRIDGE_VERSION = "0.1.0";

export async function runMcpBridge(
  flags: {
    stateDir: string;
    url?: string[] | undefined;
    tokenFile?: string | undefined;
    conversation?: string | undefined;
  },
  logger: Logger,
): Promise<void> {
  const { serveBridge } = await import("../bridge/serve.js");
  const { parseUrls } = await import("../bridge/target.js");
  const { url, ...rest } = flags;
  const bridge = await serveBridge({ ...rest, urls: parseUrls(url) }, logger.child({ proc: "mcp" }), BRIDGE_VERSION);
  // The harness closing our stdin ends the bridge.
  process.stdin.once("end", () => void bridge.close().finally(() => process.exit(0)));
  for (const sig of ["SIGINT", "SIGTERM"] as const)
    process.once(sig, () => void bridge.close().finally(() => process.exit(0)));
}
