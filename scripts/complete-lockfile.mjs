#!/usr/bin/env node
// npm records only the optional platform packages its registry could resolve. The registry these machines
// reach carries @duckdb/node-bindings for linux-x64 only, so the lock misses darwin/win32/arm64 entries and
// `npm ci` then calls it out of sync. This adds each missing optional platform package as an entry gated by
// os/cpu/libc (as npm writes them), which npm ci skips on other platforms and fetches on its own.
// Run after any `npm install` that rewrites package-lock.json: node scripts/complete-lockfile.mjs
import { readFileSync, writeFileSync } from 'node:fs';

const LOCK = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(LOCK, 'utf8'));
const packages = lock.packages;

/** os, cpu and libc of a platform package, from its name suffix (`-darwin-arm64`, `-linux-x64-musl`). */
function platformOf(name) {
  const m = /-(darwin|linux|win32)-(x64|arm64|ia32|arm)(?:-(musl|gnu))?$/.exec(name);
  if (!m) return null;
  return { os: [m[1]], cpu: [m[2]], ...(m[3] ? { libc: [m[3]] } : {}) };
}

let added = 0;
for (const [path, entry] of Object.entries(packages)) {
  for (const [dep, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const target = `node_modules/${dep}`;
    const platform = platformOf(dep);
    if (packages[target] || !platform) continue;
    packages[target] = { version, ...platform, license: entry.license, optional: true };
    added += 1;
    console.log(`added ${target}@${version} (${JSON.stringify(platform)}) for ${path}`);
  }
}
if (added > 0) writeFileSync(LOCK, `${JSON.stringify(lock, null, 2)}\n`);
console.log(added > 0 ? `${added} platform entries added` : 'lockfile already complete');
