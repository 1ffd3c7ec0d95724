#!/usr/bin/env node
/**
 * npm run audit:prod — known vulnerabilities of the production dependencies (what `npm ci --omit=dev` installs) at
 * high or critical severity. Exit 0: none. Exit 1: some (listed). Exit 2: the audit could not be performed,
 * e.g. because the registry this machine uses has no audit endpoint (a read-only mirror answers the bulk
 * advisory POST with 405): that is said plainly, never reported as a pass.
 */
import { spawnSync } from 'node:child_process';

const args = ['audit', '--omit=dev', '--audit-level=high', '--json'];
const npm = spawnSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', args, { encoding: 'utf8' });

let report;
try {
  report = JSON.parse(npm.stdout);
} catch {
  console.error(`audit: NOT PERFORMED: npm ${args.join(' ')} gave no report (exit ${npm.status}).`);
  console.error(npm.stderr.trim());
  process.exit(2);
}

if (!report.metadata) {
  // npm reports a failed request to the audit endpoint as JSON with the request and its status.
  const registry = spawnSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8' }).stdout.trim();
  const status = report.statusCode ? `${report.statusCode} ` : '';
  const noEndpoint = report.statusCode === 404 || report.statusCode === 405 || report.statusCode === 501;
  console.error(
    noEndpoint
      ? `audit: NOT PERFORMED: the registry ${registry} has no audit endpoint (${status}${report.method ?? 'POST'} ${report.uri ?? ''}). ` +
          'Run `npm run audit:prod` where the public npm registry (or a mirror that proxies its audit API) is reachable.'
      : `audit: NOT PERFORMED: the audit request failed: ${status}${report.message ?? JSON.stringify(report.error ?? report)}`,
  );
  process.exit(2);
}

const counts = report.metadata.vulnerabilities;
const serious = Object.values(report.vulnerabilities ?? {}).filter((v) => v.severity === 'high' || v.severity === 'critical');
console.log(
  `audit: production dependencies: ${counts.critical} critical, ${counts.high} high, ${counts.moderate} moderate, ${counts.low} low ` +
    `(${report.metadata.dependencies?.prod ?? '?'} packages)`,
);
for (const v of serious) {
  const titles = v.via.filter((x) => typeof x === 'object').map((x) => `${x.title} (${x.url})`);
  console.log(`  ${v.severity}: ${v.name} ${v.range}${titles.length ? `: ${titles.join('; ')}` : ` via ${v.via.join(', ')}`}`);
}
process.exit(serious.length > 0 ? 1 : 0);
