import { pino, type Logger, type DestinationStream } from 'pino';

/**
 * Paths redacted as a second line of defence: the client never logs headers or keys in the first place,
 * and a test greps real log output for the key rather than trusting this list.
 */
const REDACT = [
  'apiKey',
  'key',
  'authorization',
  'Authorization',
  'headers.authorization',
  'headers.Authorization',
  '*.headers.authorization',
  '*.headers.Authorization',
  '*.apiKey',
];

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { app: 'salesync' },
      redact: { paths: REDACT, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? pino.destination({ dest: 2, sync: true }),
  );
}
