/** Turns of the event loop taken by others while `work` runs: how often a loop that yields in turns let them in. */
export async function turnsOthersGot(work: () => Promise<unknown>): Promise<number> {
  let turns = 0;
  let running = true;
  const tick = () => {
    if (!running) return;
    turns += 1;
    setImmediate(tick);
  };
  setImmediate(tick);
  await work();
  running = false;
  return turns;
}
