/** Percentiles and summaries of latency samples; every figure is computed over many samples, never one. */

export interface LatencySummary {
  p50_ms: number;
  p99_ms: number;
  mean_ms: number;
  min_ms: number;
  max_ms: number;
  n: number;
}

/** Nearest-rank percentile of an unsorted sample set (0 < p ≤ 100). */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

export function round(value: number, digits = 2): number {
  if (!Number.isFinite(value)) return value;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

export function summarize(samples: readonly number[]): LatencySummary {
  const n = samples.length;
  const mean = n ? samples.reduce((a, b) => a + b, 0) / n : Number.NaN;
  return {
    p50_ms: round(percentile(samples, 50)),
    p99_ms: round(percentile(samples, 99)),
    mean_ms: round(mean),
    min_ms: round(n ? Math.min(...samples) : Number.NaN),
    max_ms: round(n ? Math.max(...samples) : Number.NaN),
    n,
  };
}

/** Times one async call in milliseconds on the monotonic clock. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = performance.now();
  const value = await fn();
  return { ms: performance.now() - start, value };
}
