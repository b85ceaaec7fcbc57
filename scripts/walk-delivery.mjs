#!/usr/bin/env node
/**
 * Static walk of one message_seat (issue 33): from `messageSeat` in controller/delivery/message-seat.ts,
 * follow every call whose target is a function declared under controller/, depth-first in source order,
 * each function walked once. Prints the files entered in order, the distinct files, and the "returns":
 * how many times the walk steps into a file it had already left for another one.
 *
 * Counting: the walk keeps a trail of file steps; a step is recorded whenever the current function's file
 * differs from the previous step's file (entering a callee's file, or coming back to the caller's file after
 * the callee's walk). A return is a step into a file that was already in the trail before; the ones taken by
 * a call (a file re-entered through a new call rather than by coming back to the caller) are also counted apart.
 * Usage: node scripts/walk-delivery.mjs [--quiet]
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
// TypeScript 7 exposes its compiler (Program, Checker) through this API; the package's main entry is only a version.
import { API, SymbolFlags } from "typescript/unstable/sync";
import {
  isArrowFunction,
  isCallExpression,
  isFunctionDeclaration,
  isFunctionExpression,
  isMethodDeclaration,
  isPropertyAccessExpression,
  isVariableDeclaration,
} from "typescript/unstable/ast/is";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const start = path.join(root, "controller/delivery/message-seat.ts");
const controllerDir = path.join(root, "controller") + path.sep;

const api = new API({ cwd: root });
const config = path.join(root, "tsconfig.json");
const snapshot = api.updateSnapshot({ openProjects: [config] });
const project = snapshot.getDefaultProjectForFile(start) ?? snapshot.getProjects()[0];
const program = project.program;
const checker = project.checker;

/** The function-like declaration a call expression lands in, or undefined outside controller/. */
function calleeOf(call) {
  let sym = checker.getSymbolAtLocation(call.expression);
  if (!sym && isPropertyAccessExpression(call.expression)) sym = checker.getSymbolAtLocation(call.expression.name);
  if (!sym) return undefined;
  if (sym.flags & SymbolFlags.Alias) sym = checker.getAliasedSymbol(sym);
  for (const handle of sym.declarations ?? []) {
    const file = String(handle.path);
    if (!path.resolve(file).startsWith(controllerDir) || file.endsWith(".d.ts")) continue;
    const d = handle.resolve(project);
    if (!d) continue;
    if (isFunctionDeclaration(d) || isMethodDeclaration(d)) return d.body ? d : undefined;
    if (
      isVariableDeclaration(d) &&
      d.initializer &&
      (isArrowFunction(d.initializer) || isFunctionExpression(d.initializer))
    )
      return d.initializer;
  }
  return undefined;
}

const seen = new Set();
const trail = [];
/** Steps taken by a call (not by coming back to the caller), to count re-entries by call separately. */
const byCall = [];
function step(file, call = false) {
  const rel = path.relative(root, file);
  if (trail.at(-1) !== rel) {
    trail.push(rel);
    byCall.push(call);
  }
}

function walk(fn) {
  if (seen.has(fn)) return;
  seen.add(fn);
  const file = fn.getSourceFile().fileName;
  step(file, true);
  const visit = (node) => {
    if (isCallExpression(node)) {
      node.forEachChild(visit); // arguments run before the call
      const target = calleeOf(node);
      if (target && !seen.has(target)) {
        walk(target);
        step(file);
      }
      return;
    }
    node.forEachChild(visit);
  };
  fn.forEachChild(visit);
}

const source = program.getSourceFile(start);
let entry;
source.forEachChild((n) => {
  if (isFunctionDeclaration(n) && n.name?.text === "messageSeat") entry = n;
});
if (!entry) throw new Error("messageSeat not found in " + start);
walk(entry);

let returns = 0;
let reenteredByCall = 0;
const left = new Set();
for (let i = 0; i < trail.length; i++) {
  if (left.has(trail[i])) {
    returns++;
    if (byCall[i]) reenteredByCall++;
  }
  if (i > 0) left.add(trail[i - 1]);
}
const distinct = new Set(trail);
if (!process.argv.includes("--quiet")) for (const f of trail) console.log(f);
console.log(`functions walked: ${seen.size}`);
console.log(`files entered (distinct): ${distinct.size}`);
console.log(
  `steps: ${trail.length}, returns: ${returns} (of them by a call, not back to a caller: ${reenteredByCall})`,
);
api.close();
