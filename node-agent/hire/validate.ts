/**
 * The agent's own checks on a hire, before anything is launched. The controller's zod
 * schema already refused malformed input; these are the facts only this machine knows
 * (the directory exists, the harness is installed), and a second line of defence for the
 * rest, since the agent trusts no caller's validation.
 */
import { statSync } from "node:fs";
import { isAbsolute } from "node:path";
import { quoteInput } from "../../shared/public-text.js";

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

export type Refusal = { reason: "unknown_directory" | "invalid_argument"; detail: string; controlFix?: string };

export function checkDirectory(dir: string): Refusal | undefined {
  if (!dir || !isAbsolute(dir) || dir.split("/").includes("..") || CONTROL.test(dir)) {
    return {
      reason: "invalid_argument",
      detail: `workingDirectory must be an absolute path without '..' or control characters, got ${quoteInput(dir)}`,
    };
  }
  let st;
  try {
    st = statSync(dir);
  } catch {
    return {
      reason: "unknown_directory",
      detail: `${dir} does not exist on this machine; nothing was launched`,
      controlFix: `create ${dir}, or hire with a directory that exists`,
    };
  }
  if (!st.isDirectory())
    return { reason: "unknown_directory", detail: `${dir} is not a directory; nothing was launched` };
  return undefined;
}

export function checkTitle(title: string): Refusal | undefined {
  if (!title.trim() || title.length > 120 || CONTROL.test(title))
    return { reason: "invalid_argument", detail: "title must be 1-120 characters without control characters" };
  return undefined;
}
