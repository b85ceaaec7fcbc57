/**
 * Fault points a test arms for one exact worker-link call (a report, a peer send, or a
 * reconcile): the controller's gateway then loses that call's request or answer as a cut link
 * would (controller/delivery/faults.ts). Each arm fires once and resolves when it did. A drop
 * point (an answer that arrived, lost on the way back) can be armed once the same way.
 */
import type { DropPoint, FaultPoints, WorkerCall, WorkerLoss } from "../../controller/delivery/faults.js";

interface Arm {
  matches: (c: WorkerCall) => boolean;
  loss: WorkerLoss;
  fired: (c: WorkerCall) => void;
}

export interface WorkerCallFaults extends FaultPoints {
  /** Loses the next call that MATCHES, at LOSS; resolves with the call once it was lost. */
  arm(matches: (c: WorkerCall) => boolean, loss: WorkerLoss): Promise<WorkerCall>;
  /** Calls that were lost, in order. */
  readonly lost: WorkerCall[];
  /** Drops the next answer that reaches POINT; resolves once it did. */
  armDrop(point: DropPoint): Promise<void>;
}

export function workerCallFaults(): WorkerCallFaults {
  const arms: Arm[] = [];
  const lost: WorkerCall[] = [];
  const drops: { point: DropPoint; fired: () => void }[] = [];
  return {
    lost,
    at: () => Promise.resolve(),
    drops(point) {
      const i = drops.findIndex((d) => d.point === point);
      if (i < 0) return false;
      drops.splice(i, 1)[0]!.fired();
      return true;
    },
    armDrop(point) {
      return new Promise<void>((resolve) => drops.push({ point, fired: resolve }));
    },
    loses(call) {
      const i = arms.findIndex((a) => a.matches(call));
      if (i < 0) return undefined;
      const [a] = arms.splice(i, 1);
      lost.push(call);
      a!.fired(call);
      return a!.loss;
    },
    arm(matches, loss) {
      return new Promise<WorkerCall>((resolve) => arms.push({ matches, loss, fired: resolve }));
    },
  };
}
