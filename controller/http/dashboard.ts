/**
 * Serves the owner's dashboard (controller/dashboard/: one page, its script modules and style) on the
 * controller's port. The page holds no data and no token: its script reads the owner token
 * from the URL fragment and calls StatusService over Connect JSON on this same origin, which
 * checks the token like any other caller. A strict CSP keeps anything but these files out.
 */
import { readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";

export const DASHBOARD_PATH = "/dashboard";

/** The script's modules, each under 400 lines; dashboard.js imports the others by relative path. */
export const DASHBOARD_SCRIPTS = [
  "dashboard.js",
  "common.js",
  "rpc.js",
  "fleet.js",
  "hires.js",
  "charts.js",
  "receipts.js",
  "detail.js",
];
const SCRIPT_TYPE = "text/javascript; charset=utf-8";

const FILES: Record<string, { file: string; type: string }> = {
  [DASHBOARD_PATH]: { file: "index.html", type: "text/html; charset=utf-8" },
  [`${DASHBOARD_PATH}/`]: { file: "index.html", type: "text/html; charset=utf-8" },
  [`${DASHBOARD_PATH}/dashboard.css`]: { file: "dashboard.css", type: "text/css; charset=utf-8" },
  ...Object.fromEntries(DASHBOARD_SCRIPTS.map((file) => [`${DASHBOARD_PATH}/${file}`, { file, type: SCRIPT_TYPE }])),
};

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** The page's files, read once: from controller/dashboard/ beside this module's folder (source or dist). */
function load(): Map<string, Buffer> {
  const dir = new URL("../dashboard/", import.meta.url);
  return new Map(Object.values(FILES).map(({ file }) => [file, readFileSync(new URL(file, dir))]));
}

export function isDashboardPath(path: string): boolean {
  return path === DASHBOARD_PATH || path.startsWith(`${DASHBOARD_PATH}/`);
}

export function createDashboard(): (req: IncomingMessage, res: ServerResponse, path: string) => void {
  const files = load();
  return (req, res, path) => {
    const entry = FILES[path];
    if (!entry) {
      res.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end("not found\n");
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res
        .writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain; charset=utf-8" })
        .end("method not allowed\n");
      return;
    }
    const body = files.get(entry.file)!;
    res.writeHead(200, {
      "content-type": entry.type,
      "content-length": body.length,
      "content-security-policy": CSP,
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      "cache-control": "no-store",
    });
    res.end(req.method === "HEAD" ? undefined : body);
  };
}
