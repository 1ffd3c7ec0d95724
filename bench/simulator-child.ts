// A simulator in its own process, so a benchmark measures the sync's memory and CPU, not the simulator's.
// Prints one JSON line {url} when listening (with `fingerprint` as a second argument, also each record table's
// fingerprint of the service's truth); runs until killed. Options as one JSON argument.
import { RECORD_RESOURCE_NAMES, resourceDescriptor } from '../src/core/resources.js';
import { createSimulator, type SimulatorOptions } from '../src/simulator/index.js';
import { fingerprintOf, type Fingerprint } from '../devtools/mirror-fingerprint.js';

const options = JSON.parse(process.argv[2] ?? '{}') as SimulatorOptions;
const sim = createSimulator(options);
const { url } = await sim.listen(0);
let fingerprints: Record<string, Fingerprint> | undefined;
if (process.argv[3] === 'fingerprint') {
  const truth = sim.admin.truth();
  fingerprints = Object.fromEntries(
    RECORD_RESOURCE_NAMES.map((resource) => [resourceDescriptor(resource).table, fingerprintOf(truth.records[resource])]),
  );
}
process.stdout.write(`${JSON.stringify({ url, fingerprints })}\n`);
const stop = () => void sim.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
