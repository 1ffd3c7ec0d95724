// Loaded with `node --import`: every module the process resolves is appended to RECORD_MODULES_FILE, one URL a
// line, so a test can see what a command loaded (the hooks run on a thread of their own: record-modules-hooks.mjs).
import { register } from 'node:module';

register('./record-modules-hooks.mjs', import.meta.url, { data: { file: process.env.RECORD_MODULES_FILE } });
