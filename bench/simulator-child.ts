// A simulator in its own process, so a benchmark measures the sync's memory and CPU, not the simulator's.
// Prints one JSON line {url} when listening (with `fingerprint` as a second argument, also each record table's
// fingerprint of the service's truth); runs until killed. Options as one JSON argument.
import { createSimulator, type SimulatorOptions } from '../src/simulator/index.js';
import { truthFingerprints } from '../devtools/mirror-fingerprint.js';

const options = JSON.parse(process.argv[2] ?? '{}') as SimulatorOptions;
const sim = createSimulator(options);
const { url } = await sim.listen(0);
const fingerprints = process.argv[3] === 'fingerprint' ? truthFingerprints(sim.admin.truth()) : undefined;
process.stdout.write(`${JSON.stringify({ url, fingerprints })}\n`);
const stop = () => void sim.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
