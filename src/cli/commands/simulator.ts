import { ConfigError } from '../../core/errors.js';
import { createSimulator, DEFAULT_KEYS } from '../../simulator/index.js';
import type { CliRuntime } from '../runtime.js';

export interface SimulatorFlags {
  port: number;
  host: string;
  seed: number;
  scale: number;
  rateLimit: number;
}

const BASE_SIZE = { deals: 500, companies: 200, contacts: 800, meetingLogs: 300, contactActivities: 400, users: 20 };

/** Run the simulator in the foreground until SIGINT/SIGTERM. */
export async function simulatorCommand(runtime: CliRuntime, flags: SimulatorFlags): Promise<void> {
  const size = Object.fromEntries(Object.entries(BASE_SIZE).map(([k, v]) => [k, Math.max(1, Math.round(v * flags.scale))]));
  const simulator = createSimulator({ seed: flags.seed, size, perKeyPerMinute: flags.rateLimit });
  const { url } = await simulator.listen(flags.port, flags.host).catch((error: unknown) => {
    if ((error as { code?: unknown } | null)?.code !== 'EADDRINUSE') throw error;
    throw new ConfigError(
      'port_in_use',
      `port ${flags.port} on ${flags.host} is already in use: choose another with --port (0 picks a free one)`,
      {
        port: flags.port,
      },
    );
  });
  runtime.out(`Sales Records Service simulator on ${url}  (seed ${flags.seed}; admin surface under ${url}/_admin/)`);
  runtime.out(
    `keys:\n${Object.entries(DEFAULT_KEYS)
      .map(([role, key]) => `  ${role.padEnd(8)} ${key}`)
      .join('\n')}`,
  );
  runtime.out(`try:  SALES_API_BASE_URL=${url} SALES_API_KEY=${DEFAULT_KEYS.read} npx salesync sync`);
  // A Ctrl-C while a large organization was being made has already fired: it fires no event again.
  if (!runtime.signal.aborted)
    await new Promise<void>((resolve) => runtime.signal.addEventListener('abort', () => resolve(), { once: true }));
  await simulator.close();
}
