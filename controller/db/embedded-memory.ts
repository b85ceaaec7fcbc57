/**
 * The embedded journal's start (`clankie up`, or a controller with no PostgreSQL URL) runs on a
 * memory budget (issue 17: the up controller ≤ 200 MB after 1,000 deliveries). V8 doubles the
 * young generation (to 2 × 16 MB) as soon as allocation is brisk, and loading the controller's
 * modules is brisk: set when PGlite opened, the cap came too late, after start-up had grown it.
 * Set before those modules load, it kept the up process at 141 MB at start (165–170 before) and
 * 179–186 MB after 1,000 deliveries (194–209), with no CPU per delivery that could be told from
 * noise (ADR 0015 amendment). The flag is read when V8 grows the space, so setting it at run time
 * takes effect; from the command line V8 clamps it to 2. PostgreSQL starts keep V8's default.
 */
import { setFlagsFromString } from "node:v8";

export function keepYoungGenerationSmall(): void {
  setFlagsFromString("--semi-space-growth-factor=1");
}
