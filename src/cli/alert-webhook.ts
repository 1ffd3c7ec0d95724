import { hostname } from 'node:os';

/**
 * SALESYNC_ALERT_URL: one JSON POST when an unattended run fails or `status --check` finds a problem. Delivery is
 * best effort: a webhook that fails or hangs is a warning in the log, never a change to the run's exit code.
 *
 * The payload (`AlertPayload`), e.g.
 * `{"source":"salesync","event":"run_failed","command":"sync","code":"redis_unavailable","message":"could not reach
 * Redis at redis://127.0.0.1:6379 (…)","exitCode":1,"host":"etl-1","warehouse":"/data/warehouse.duckdb",
 * "at":"2026-11-25T03:00:12.000Z","problems":[],"text":"salesync sync failed on etl-1: redis_unavailable: …"}`.
 * `text` makes it readable as it is by chat webhooks (Slack, Mattermost) that show a `text` field.
 */
export interface AlertPayload {
  source: 'salesync';
  /** `run_failed`: a command ended with a non-zero exit; `check_failed`: `status --check` found problems. */
  event: 'run_failed' | 'check_failed';
  command: string;
  /** The failure's stable code (`redis_unavailable`, `unauthorized`, `check_failed`…). */
  code: string;
  message: string;
  exitCode: number;
  host: string;
  warehouse: string;
  /** ISO 8601. */
  at: string;
  /** `status --check`: one entry per problem (`resource`, `kind`: stale, never_completed, failed, quarantine…, `message`). */
  problems: Array<{ resource: string; kind: string; message: string }>;
  /** The same in one line. */
  text: string;
}

export function alertPayload(facts: {
  command: string;
  code: string;
  message: string;
  exitCode: number;
  warehouse: string;
  problems?: AlertPayload['problems'];
  at?: Date;
  host?: string;
}): AlertPayload {
  const host = facts.host ?? hostname();
  const event = facts.code === 'check_failed' ? 'check_failed' : 'run_failed';
  const what =
    event === 'check_failed' ? `salesync status --check found problems on ${host}` : `salesync ${facts.command} failed on ${host}`;
  return {
    source: 'salesync',
    event,
    command: facts.command,
    code: facts.code,
    message: facts.message,
    exitCode: facts.exitCode,
    host,
    warehouse: facts.warehouse,
    at: (facts.at ?? new Date()).toISOString(),
    problems: facts.problems ?? [],
    text: `${what}: ${facts.code}: ${facts.message}`,
  };
}

/** How long a webhook may take: an alert must never hold a cron job. */
export const ALERT_TIMEOUT_MS = 5000;

/**
 * POST the payload; resolves with null when delivered (2xx), or the reason it was not (never throws). The URL
 * is never part of the reason: it often carries a token.
 */
export async function postAlert(url: string, payload: AlertPayload, timeoutMs = ALERT_TIMEOUT_MS): Promise<string | null> {
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'salesync' },
      body: JSON.stringify(payload),
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'error',
    });
    await response.body?.cancel().catch(() => undefined);
    return response.ok ? null : `HTTP ${response.status}`;
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return `no answer within ${timeoutMs} ms`;
    return cause ?? (error instanceof Error ? error.name : 'unknown error');
  }
}
