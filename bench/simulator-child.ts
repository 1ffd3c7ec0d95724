// A simulator in its own process, so a benchmark measures the sync's memory and CPU, not the simulator's.
// Prints one JSON line {url} when listening; runs until killed. Options as one JSON argument.
import { createSimulator, type SimulatorOptions } from '../src/simulator/index.js';

const options = JSON.parse(process.argv[2] ?? '{}') as SimulatorOptions;
const sim = createSimulator(options);
const { url } = await sim.listen(0);
process.stdout.write(`${JSON.stringify({ url })}\n`);
const stop = () => void sim.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
