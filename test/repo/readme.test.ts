/**
 * Issue 37 item 5: the README's "Two commands" block listed three. It must hold exactly two
 * commands, and the separate-hosts suite (npm run test:netns) is still documented elsewhere.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const README = readFileSync(new URL("../../README.md", import.meta.url), "utf8");

describe("the README says what is true (issue 37 item 5)", () => {
  it("the 'Two commands' block holds exactly two commands", () => {
    const block = /## Two commands\n\n```sh\n([\s\S]*?)```/.exec(README)?.[1];
    expect(block).toBeDefined();
    const commands = block!.split("\n").filter((l) => l.trim() && !l.trim().startsWith("#"));
    expect(commands.map((l) => l.replace(/\s+#.*$/, ""))).toEqual(["npm ci && npm start", "npm test"]);
  });

  it("npm run test:netns is documented outside that block", () => {
    expect(README.split("## Two commands")[1]!.split("```").slice(2).join("```")).toContain("npm run test:netns");
  });
});
