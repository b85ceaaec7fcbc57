/** A bench tool's entry point: exit 0 once `main` resolves; on a throw, print its stack and exit 1. */
export function runTool(main: () => Promise<unknown>): void {
  main().then(
    () => process.exit(0),
    (e: unknown) => {
      process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
      process.exit(1);
    },
  );
}
