/**
 * hire_agent's arguments (zod, strict: unknown fields are refused, as for message_seat).
 * Paths and titles are checked here so a bad one is refused before any receipt or effect.
 */
import { z } from "zod";

export const HIRE_AGENT = "hire_agent";
export const HIRE_HARNESSES = ["codex", "claude", "opencode", "pi"] as const;
export type HireHarness = (typeof HIRE_HARNESSES)[number];
export const MAX_BRIEF_CHARS = 32_768;

// C0, DEL and C1 controls: a title is shown in panes and terminals, so it must not steer them.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

const absolutePath = z
  .string()
  .min(1)
  .max(4096)
  .refine((p) => p.startsWith("/"), "workingDirectory must be an absolute path")
  .refine((p) => !p.split("/").includes(".."), "workingDirectory must not contain '..' segments")
  .refine((p) => !CONTROL.test(p), "workingDirectory must not contain control characters");

const plainLine = (what: string, max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .refine((s) => !CONTROL.test(s), `${what} must not contain control characters`)
    .refine((s) => s.trim().length > 0, `${what} must not be blank`);

export const hireAgentArgs = z
  .object({
    harness: z
      .enum(HIRE_HARNESSES)
      .describe("The harness to start: one the target machine can start (codex, claude, opencode, pi)."),
    workingDirectory: absolutePath.describe(
      "An absolute, existing directory on the target machine; the worker starts there.",
    ),
    title: plainLine("title", 120).describe("The seat's title, shown in its pane."),
    role: plainLine("role", 200).describe("The worker's role in one line (shown to the worker with its brief)."),
    brief: z
      .string()
      .min(1)
      .max(MAX_BRIEF_CHARS)
      .optional()
      .describe("The first message, delivered through the new seat's native channel once it is ready, never typed."),
    machine: z
      .string()
      .min(1)
      .max(64)
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, "machine must be a machine name")
      .optional()
      .describe("The machine to hire on; may be omitted when exactly one is online."),
    model: z
      .string()
      .min(1)
      .max(200)
      .regex(/^[A-Za-z0-9][A-Za-z0-9._:/@-]*$/, "model must be a model name")
      .optional(),
    effort: z.enum(["minimal", "low", "medium", "high", "xhigh"]).optional(),
    freshIntent: z
      .object({
        id: z.string().uuid().describe("A new id for this new intent."),
        afterReceiptId: z.string().uuid().describe("The settled original hire this new work follows."),
      })
      .strict()
      .optional()
      .describe("New work for an intent whose original hire was settled (not-launched or abandoned-unknown)."),
  })
  .strict();

export type HireAgentInput = z.infer<typeof hireAgentArgs>;
