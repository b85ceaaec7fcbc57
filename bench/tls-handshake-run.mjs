// The agent link's TLS cost alone (what bench/results/tls-handshake.json holds), on a scratch
// PostgreSQL database: node bench/tls-handshake-run.mjs POSTGRES_URL [N]. Build first with
// npm run build && npx tsc -p tsconfig.bench.json. `npm run bench` measures the same in its peer section.
const [url, n = "40"] = process.argv.slice(2);
if (!url) throw new Error("usage: node bench/tls-handshake-run.mjs postgres://…/scratch_db [N]");
const { startBenchFleet } = await import("../dist/bench/fleet.js");
const { runTlsHandshake } = await import("../dist/bench/sections/tls-handshake.js");
const fleet = await startBenchFleet({ databaseUrl: url, seats: 1 });
try {
  console.log(
    JSON.stringify(
      {
        when: new Date().toISOString(),
        loadavg: (await import("node:os")).loadavg(),
        ...(await runTlsHandshake(fleet, Number(n))),
      },
      null,
      2,
    ),
  );
} finally {
  await fleet.close();
}
process.exit(0);
