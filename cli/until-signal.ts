/**
 * Waiting for SIGINT/SIGTERM, shared by `clankie controller`, `up` and `agent`. Its own file so
 * that `clankie agent` does not load the controller (drizzle, PGlite, the MCP SDK) to get it.
 */

/** Resolves once a signal asked the process to stop and `close` finished. */
export function untilSignal(close: () => Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    let closing = false;
    const stop = () => {
      if (closing) return;
      closing = true;
      close().finally(resolve);
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
}
