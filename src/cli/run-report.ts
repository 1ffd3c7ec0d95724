import { existsSync } from 'node:fs';
import { describeError, SalesyncError } from '../core/errors.js';
import type { CliRuntime } from './runtime.js';

/**
 * What an unattended run leaves behind for monitoring, once it has ended: the metrics textfile
 * (SALESYNC_METRICS_TEXTFILE) and, when it failed, the alert webhook (SALESYNC_ALERT_URL). Neither may change
 * the run's exit code nor hold it for long: each failure is one warning in the log. The modules load only when
 * their setting is set (a plain cron `sync` never loads prom-client).
 */
export interface RunOutcome {
  command: string;
  /** Epoch ms. */
  startedAt: number;
  exitCode: number;
  /** The failure, when it failed. */
  error: unknown;
}

/** How long reading the warehouse for the textfile may wait for another process holding it. */
const TEXTFILE_LOCK_WAIT_MS = 10_000;

export async function reportRun(runtime: CliRuntime, outcome: RunOutcome, wants: { textfile: boolean; alert: boolean }): Promise<void> {
  const { config, logger } = runtime;
  if (wants.textfile && config.metricsTextfile) {
    try {
      await writeRunTextfile(runtime, config.metricsTextfile, outcome);
    } catch (error) {
      logger.warn(
        { err: error instanceof Error ? error.message : String(error), path: config.metricsTextfile },
        'could not write the metrics textfile (SALESYNC_METRICS_TEXTFILE)',
      );
    }
  }
  // An operator's own Ctrl-C is not an incident.
  if (wants.alert && config.alertUrl && outcome.exitCode !== 0 && outcome.exitCode !== 130) {
    const { alertPayload, postAlert } = await import('./alert-webhook.js');
    const { code, message } = describeError(outcome.error);
    const problems =
      outcome.error instanceof SalesyncError
        ? (outcome.error.context.problems as { resource: string; kind: string; message: string }[] | undefined)
        : undefined;
    const payload = alertPayload({
      command: outcome.command,
      code,
      message: message.replace(/\s*\n\s*/g, ' '),
      exitCode: outcome.exitCode,
      warehouse: config.warehousePath,
      ...(problems ? { problems } : {}),
    });
    const failure = await postAlert(config.alertUrl, payload);
    if (failure)
      logger.warn(
        { reason: failure, event: payload.event },
        "could not deliver the alert to SALESYNC_ALERT_URL (the run's exit code is unchanged)",
      );
    else logger.info({ event: payload.event, code }, 'alert sent to SALESYNC_ALERT_URL');
  }
}

async function writeRunTextfile(runtime: CliRuntime, path: string, outcome: RunOutcome): Promise<void> {
  const [{ writeTextfile }, { collectStatus }, { createWarehouse }] = await Promise.all([
    import('./metrics-textfile.js'),
    import('../status/index.js'),
    import('../sync/index.js'),
  ]);
  const { config, logger } = runtime;
  let statuses = null;
  if (existsSync(config.warehousePath)) {
    const warehouse = createWarehouse({ ...config, lockTimeoutMs: Math.min(config.lockTimeoutMs, TEXTFILE_LOCK_WAIT_MS) }, logger);
    try {
      statuses = await collectStatus(warehouse);
    } finally {
      await warehouse.close();
    }
  }
  const { code } = outcome.error === null ? { code: null } : describeError(outcome.error);
  await writeTextfile(path, statuses, {
    command: outcome.command,
    startedAt: outcome.startedAt,
    durationMs: Date.now() - outcome.startedAt,
    exitCode: outcome.exitCode,
    errorCode: code,
  });
}
