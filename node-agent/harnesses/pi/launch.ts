/**
 * Pi: the interactive TUI with the Clankie extension, which opens its socket in the agent's
 * Pi socket folder (CLANKIE_PI_SOCKET_DIR) for the Pi adapter to dial, and the worker tools
 * extension (message_clankie and peers, ADR 0050), bound to this agent's state directory.
 */
import type { HarnessLauncher, LaunchContext, LaunchRequest, LaunchPlan, ScreenBlock } from "../../hire/launcher.js";
import { installedFile } from "../../hire/launcher.js";
import { dirname } from "node:path";
import type { CannotWork } from "../adapter.js";

export class PiLauncher implements HarnessLauncher {
  readonly harness = "pi" as const;

  async plan(req: LaunchRequest, ctx: LaunchContext): Promise<LaunchPlan> {
    const argv = [
      ctx.bin,
      "-e",
      installedFile("worker/pi-extension.js"),
      "-e",
      installedFile("worker/pi-worker-tools.js"),
    ];
    if (req.model) argv.push("--model", req.model);
    if (req.effort) argv.push("--thinking", req.effort);
    // The Pi socket folder is <agent state>/pi/sockets (native-adapters.ts).
    const agentStateDir = dirname(dirname(ctx.piSocketDir));
    return {
      argv,
      env: {
        CLANKIE_PI_SOCKET_DIR: ctx.piSocketDir,
        CLANKIE_PI_NATIVE_ENABLED: "1",
        CLANKIE_AGENT_STATE_DIR: agentStateDir,
      },
    };
  }

  screenBlock(): ScreenBlock | undefined {
    return undefined;
  }

  /** Pi's own refusals of a turn, as its TUI shows them (auth-guidance in the pinned Pi). */
  fatalScreen(screen: string): CannotWork | undefined {
    const key = /No API key found for [^\n.]*/.exec(screen);
    if (key) return { reason: "no_api_key", detail: `Pi shows "${key[0].trim()}"` };
    const none = /No models available|No model selected/.exec(screen);
    if (none) return { reason: "no_model", detail: `Pi shows "${none[0]}"` };
    return undefined;
  }
}
