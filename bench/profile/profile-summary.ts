/**
 * Reads V8 CPU profiles and sampling heap profiles (the inspector's JSON) into per-call
 * figures by place: a repository directory (`controller/mcp`), a package
 * (`@modelcontextprotocol/sdk`), Node's internals (`node:http2`), or `(gc)` / `(program)`.
 * CPU is apportioned by sample count, scaled to the process's measured CPU time: a sample's
 * time delta is wall time, and on a loaded box one that waited while the process was
 * descheduled would charge tens of ms to whatever frame it landed in.
 */
import { REPO_ROOT } from "../paths.js";
import { round } from "../stats.js";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
export interface CpuProfile {
  nodes: { id: number; callFrame: CallFrame }[];
  samples: number[];
  timeDeltas: number[];
}
interface HeapNode {
  callFrame: CallFrame;
  selfSize: number;
  children: HeapNode[];
}
export interface HeapProfile {
  head: HeapNode;
}

/** Where a frame's code lives, coarse enough to name an owner. */
export function placeOf(frame: CallFrame): string {
  const url = frame.url;
  if (!url) return frame.functionName.startsWith("(") ? frame.functionName : "(native)";
  const nm = url.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const parts = url.slice(nm + "node_modules/".length).split("/");
    return parts[0]!.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  if (url.startsWith("node:"))
    return url
      .split("/")
      .slice(0, 2)
      .join("/")
      .replace(/^node:internal\//, "node:");
  const path = url
    .replace(/^file:\/\//, "")
    .replace(`${REPO_ROOT}/`, "")
    .replace(/^dist\//, "");
  return path.split("/").slice(0, 2).join("/");
}

/** Samples per place (each sample counts for the frame it landed in), idle excluded. */
export function cpuByPlace(p: CpuProfile): Map<string, number> {
  const placeById = new Map(p.nodes.map((n) => [n.id, placeOf(n.callFrame)]));
  const out = new Map<string, number>();
  for (const id of p.samples) {
    const place = placeById.get(id)!;
    if (place !== "(idle)") out.set(place, (out.get(place) ?? 0) + 1);
  }
  return out;
}

/** Bytes allocated per place (the sampling profiler's scaled self sizes). */
export function allocatedByPlace(h: HeapProfile): Map<string, number> {
  const out = new Map<string, number>();
  const walk = (n: HeapNode) => {
    const place = placeOf(n.callFrame);
    out.set(place, (out.get(place) ?? 0) + n.selfSize);
    n.children.forEach(walk);
  };
  walk(h.head);
  return out;
}

export interface PlaceFigure {
  place: string;
  cpu_ms_per_call: number;
  allocated_kb_per_call: number;
}

/** `cpuMsPerCall`: the process's measured CPU per call, shared out by sample count. */
export function byPlace(
  cpu: Map<string, number>,
  heap: Map<string, number>,
  calls: number,
  cpuMsPerCall: number,
): PlaceFigure[] {
  const places = new Set([...cpu.keys(), ...heap.keys()]);
  const n = Math.max(1, calls);
  const samples = Math.max(
    1,
    [...cpu.values()].reduce((a, b) => a + b, 0),
  );
  return [...places]
    .filter((p) => p !== "(idle)")
    .map((place) => ({
      place,
      cpu_ms_per_call: round(((cpu.get(place) ?? 0) / samples) * cpuMsPerCall, 3),
      allocated_kb_per_call: round((heap.get(place) ?? 0) / 1024 / n, 2),
    }))
    .sort((a, b) => b.cpu_ms_per_call - a.cpu_ms_per_call);
}

/** The functions with the most self time, per call (shared out as in byPlace). */
export function byFunction(p: CpuProfile, cpuMsPerCall: number): { fn: string; ms_per_call: number }[] {
  const nameById = new Map(
    p.nodes.map((n) => [
      n.id,
      `${n.callFrame.functionName || "(anonymous)"} ${placeOf(n.callFrame)}:${n.callFrame.lineNumber + 1}`,
    ]),
  );
  const out = new Map<string, number>();
  for (const id of p.samples) {
    const name = nameById.get(id)!;
    if (!name.startsWith("(idle)")) out.set(name, (out.get(name) ?? 0) + 1);
  }
  const samples = Math.max(
    1,
    [...out.values()].reduce((a, b) => a + b, 0),
  );
  return [...out.entries()]
    .map(([fn, count]) => ({ fn, ms_per_call: round((count / samples) * cpuMsPerCall, 3) }))
    .sort((a, b) => b.ms_per_call - a.ms_per_call);
}
