/** Structured logs: one JSON object per line on stderr, so stdout stays for command output. */
export type LogLevel = "debug" | "info" | "warn" | "error";

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export function createLogger(
  options: { level?: LogLevel; fields?: Record<string, unknown>; write?: (line: string) => void } = {},
): Logger {
  const threshold = ORDER[options.level ?? "info"];
  const base = options.fields ?? {};
  const write = options.write ?? ((line: string) => process.stderr.write(line + "\n"));
  const emit = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[level] < threshold) return;
    write(JSON.stringify({ t: new Date().toISOString(), level, msg, ...base, ...fields }));
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    child: (fields) => createLogger({ level: options.level, fields: { ...base, ...fields }, write }),
  };
}

/** A logger that drops everything (tests, quiet commands). */
export const silentLogger: Logger = createLogger({ write: () => {} });
