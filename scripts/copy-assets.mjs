#!/usr/bin/env node
/**
 * Part of `npm run build`: the files the compiled code reads at run time that tsc does not emit (the limiter's
 * Lua scripts), copied beside the modules that read them, so that the build (and a packed install) is whole.
 */
import { cpSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const ASSETS = [{ from: 'src/limiter/lua', to: 'dist/src/limiter/lua', ending: '.lua' }];

for (const { from, to, ending } of ASSETS) {
  mkdirSync(join(root, to), { recursive: true });
  for (const name of readdirSync(join(root, from)).filter((n) => n.endsWith(ending))) {
    cpSync(join(root, from, name), join(root, to, name));
  }
}
