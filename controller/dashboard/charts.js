// The charts over a chosen range (15 min to 24 h), drawn from StatusService.ReceiptTimeline:
// receipts per bucket by outcome (stacked bars) and settled latency per bucket (median dot, a
// line up to the maximum, log scale), each with labelled axes.
import { $ } from "./common.js";
import { call, STATUS } from "./rpc.js";

const SVG = "http://www.w3.org/2000/svg";
// `ticks`: intervals on the time axis, chosen so every tick is a whole number of minutes or hours.
export const RANGES = {
  "15m": { seconds: 900, buckets: 15, unit: "min", ticks: 3 },
  "1h": { seconds: 3600, buckets: 30, unit: "min", ticks: 4 },
  "6h": { seconds: 21_600, buckets: 36, unit: "h", ticks: 3 },
  "24h": { seconds: 86_400, buckets: 48, unit: "h", ticks: 4 },
};
const GROUPS = [
  { key: "delivered", name: "delivered", color: "#047857" },
  { key: "unresolved", name: "unresolved", color: "#b45309" },
  { key: "notSent", name: "not sent", color: "#b91c1c" },
];
const H = 170;
const M = { left: 42, right: 10, top: 10, bottom: 34 };
const INK = "#4b5563";

function svgEl(name, attrs, text) {
  const el = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

const label = (x, y, text, extra = {}) => svgEl("text", { x, y, "font-size": 10, fill: INK, ...extra }, text);

const span = (ms) => (ms >= 3_600_000 ? `${+(ms / 3_600_000).toFixed(1)} h` : `${Math.round(ms / 60_000)} min`);

/** Both axes, their ticks and titles; returns the plot's box for the marks. */
function axes(svg, W, range, yTicks, yTitle) {
  const box = { x: M.left, y: M.top, w: W - M.left - M.right, h: H - M.top - M.bottom };
  const els = [];
  for (const t of yTicks) {
    const y = box.y + box.h - t.at * box.h;
    els.push(svgEl("line", { x1: box.x, x2: box.x + box.w, y1: y, y2: y, stroke: "#e5e7eb" }));
    els.push(label(box.x - 4, y + 3, t.text, { "text-anchor": "end", class: "tick-y" }));
  }
  const ago = range.seconds / (range.unit === "h" ? 3600 : 60);
  const n = range.ticks;
  for (let i = 0; i <= n; i++) {
    const x = box.x + (box.w * i) / n;
    const text = i === n ? "now" : `${+(ago * (1 - i / n)).toFixed(1)}`;
    const anchor = i === 0 ? "start" : i === n ? "end" : "middle";
    els.push(label(x, box.y + box.h + 12, text, { "text-anchor": anchor, class: "tick-x" }));
  }
  els.push(svgEl("line", { x1: box.x, x2: box.x + box.w, y1: box.y + box.h, y2: box.y + box.h, stroke: "#9ca3af" }));
  const xTitle = `${range.unit === "h" ? "hours" : "minutes"} ago`;
  els.push(label(box.x + box.w / 2, H - 3, xTitle, { "text-anchor": "middle", class: "axis-x" }));
  const ty = box.y + box.h / 2;
  els.push(label(11, ty, yTitle, { "text-anchor": "middle", transform: `rotate(-90 11 ${ty})`, class: "axis-y" }));
  svg.replaceChildren(...els);
  return box;
}

function drawOutcomes(t, range, W) {
  const svg = $("chart-outcomes");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const buckets = t.buckets ?? [];
  const total = (b) => GROUPS.reduce((n, g) => n + Number(b[g.key] ?? 0), 0);
  const max = Math.max(1, ...buckets.map(total));
  const ticks = [...new Set([0, Math.ceil(max / 2), max])].map((n) => ({ at: n / max, text: String(n) }));
  const per = span(Number(t.bucketMs));
  const box = axes(svg, W, range, ticks, `receipts per ${per}`);
  const bw = box.w / Math.max(1, buckets.length);
  buckets.forEach((b, i) => {
    let y = box.y + box.h;
    for (const g of GROUPS) {
      const n = Number(b[g.key] ?? 0);
      if (!n) continue;
      const h = (n / max) * box.h;
      y -= h;
      const attrs = { x: box.x + i * bw + 1, y, width: Math.max(1, bw - 2), height: h, fill: g.color };
      const rect = svgEl("rect", { ...attrs, class: `bar bar-${g.name.replace(" ", "-")}` });
      const from = new Date(Number(b.startUnixMs)).toLocaleTimeString();
      rect.append(svgEl("title", {}, `${n} ${g.name} in the ${per} from ${from}`));
      svg.append(rect);
    }
  });
  const legend = $("legend-outcomes");
  legend.replaceChildren(
    document.createTextNode(`receipts per ${per}, by outcome:`),
    ...GROUPS.flatMap((g) => {
      const sw = document.createElement("span");
      sw.className = "swatch";
      sw.style.background = g.color;
      return [sw, document.createTextNode(g.name)];
    }),
  );
}

function drawLatency(t, range, W) {
  const svg = $("chart-latency");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const buckets = (t.buckets ?? []).map((b, i) => ({
    i,
    p50: Number(b.latencyP50Ms ?? 0),
    max: Number(b.latencyMaxMs ?? 0),
    b,
  }));
  const settled = buckets.filter((b) => b.max > 0);
  const decades = Math.max(1, Math.ceil(Math.log10(Math.max(10, ...settled.map((b) => b.max)))));
  const at = (ms) => Math.log10(Math.max(1, ms)) / decades;
  const tick = (d) => (d < 3 ? `${10 ** d}` : `${10 ** (d - 3)}k`);
  const ticks = Array.from({ length: decades + 1 }, (_, d) => ({ at: d / decades, text: tick(d) }));
  const box = axes(svg, W, range, ticks, "latency, ms (log)");
  const bw = box.w / Math.max(1, buckets.length);
  const yOf = (ms) => box.y + box.h - at(ms) * box.h;
  for (const s of settled) {
    const x = box.x + (s.i + 0.5) * bw;
    const when = new Date(Number(s.b.startUnixMs)).toLocaleTimeString();
    const whisker = svgEl("line", { x1: x, x2: x, y1: yOf(s.p50), y2: yOf(s.max), stroke: "#6b7280", class: "max" });
    const dot = svgEl("circle", { cx: x, cy: yOf(s.p50), r: 3, fill: "#1d4ed8", class: "dot" });
    dot.append(svgEl("title", {}, `median ${s.p50} ms, max ${s.max} ms, from ${when}`));
    svg.append(whisker, dot);
  }
  if (!settled.length) {
    const text = `no settled delivery in the last ${span(range.seconds * 1000)}`;
    const attrs = { "text-anchor": "middle", "font-size": 11, class: "chart-empty" };
    svg.append(label(box.x + box.w / 2, box.y + box.h / 2, text, attrs));
  }
  const per = span(Number(t.bucketMs));
  $("legend-latency").textContent = `settled latency per ${per}: dot the median, line up to the maximum`;
}

let inFlight = null;
let again = false;

/** Fetches and draws the chosen range; calls while one is under way coalesce into one more. */
export async function refreshCharts() {
  if (inFlight) {
    again = true;
    return inFlight;
  }
  inFlight = (async () => {
    do {
      again = false;
      const range = RANGES[$("range").value] ?? RANGES["1h"];
      const t = await call(STATUS + "ReceiptTimeline", { rangeSeconds: range.seconds, buckets: range.buckets });
      // Drawn at the boxes' real width, so labels keep their size at any screen width.
      const W = Math.max(220, Math.round($("chart-outcomes").getBoundingClientRect().width) || 300);
      drawOutcomes(t, range, W);
      drawLatency(t, range, W);
    } while (again);
  })().finally(() => (inFlight = null));
  return inFlight;
}

export function wireCharts() {
  $("range").addEventListener("change", () => void refreshCharts().catch(() => {}));
}
