/**
 * Calls of one conversation are admitted one after another, in the order they reached the
 * controller: each admission statement starts after the previous one committed and entered
 * its seat's turn, so the seat serves them in that order (rule 25). Other conversations are
 * not held up; the chain holds no connection while it waits.
 */
export class AdmissionOrder {
  private readonly tails = new Map<string, Promise<unknown>>();

  admit<T>(conversationId: string, fn: () => Promise<T>): Promise<T> {
    const before = this.tails.get(conversationId);
    const run = before ? before.then(fn, fn) : fn();
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(conversationId, tail);
    void tail.then(() => {
      if (this.tails.get(conversationId) === tail) this.tails.delete(conversationId);
    });
    return run;
  }
}
