/**
 * Progress for steps that can take more than a second (the first start's database init, the
 * agent's registration): one status line on stderr, rewritten in place, only when stderr is a
 * terminal and the output is not --json, so scripts and logs see nothing extra.
 */
export interface Progress {
  step(text: string): void;
  done(): void;
}

export function progress(o: { json: boolean }, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (o.json || !stream.isTTY) return { step() {}, done() {} };
  let started = Date.now();
  let current = "";
  const draw = () => stream.write(`\r\x1b[2K… ${current} (${Math.floor((Date.now() - started) / 1000)} s)`);
  const timer = setInterval(draw, 1000);
  timer.unref();
  return {
    step(text) {
      current = text;
      started = Date.now();
      draw();
    },
    done() {
      clearInterval(timer);
      stream.write("\r\x1b[2K");
    },
  };
}
