// One wide organization (bench/wide-tables.ts) in its own process, so the peak RSS it reports is the work's
// alone. Takes the options as one JSON argument; prints the result as one JSON line.
import { runWideOrganization, type WideOrganizationOptions } from './wide-tables.js';

const options = JSON.parse(process.argv[2] ?? '{}') as WideOrganizationOptions;
process.stdout.write(`${JSON.stringify(await runWideOrganization(options))}\n`);
