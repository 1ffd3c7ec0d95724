import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The project root, found by walking up from a module until `package.json` appears: the same code runs
 * from `src/` under vitest and from `dist/src/` when built, at different depths.
 */
export function projectRoot(fromModuleUrl: string): string {
  let dir = dirname(fileURLToPath(fromModuleUrl));
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${fileURLToPath(fromModuleUrl)}`);
    dir = parent;
  }
}

/** Where `salesync demo` builds its warehouse unless told otherwise (`-w`). */
export const DEMO_WAREHOUSE_PATH = './data/demo.duckdb';
