/** A deals table of many properties, for bench:wide and the memory-limit tests: every third a number, the rest short text. */
import type { PropertyDefinition, ServiceRecord } from '../src/core/types.js';

export function wideDefinitions(width: number): PropertyDefinition[] {
  return Array.from({ length: width }, (_, i) => ({
    api_name: `p${i}`,
    display_name: `P ${i}`,
    property_type: i % 3 === 0 ? 'number' : 'text',
    is_core: false,
    is_required_on_create: false,
    options: [],
  }));
}

/** Deal `n` with a value for each of `defs`, updated on 2026-01-0`day` (a later day replaces the stored row). */
export function wideRecord(n: number, day: number, defs: readonly PropertyDefinition[]): ServiceRecord {
  const properties = Object.fromEntries(defs.map((d, i) => [d.api_name, i % 3 === 0 ? n + i : `value ${n} ${i} ${'x'.repeat(12)}`]));
  return { id: `D${String(n).padStart(17, '0')}`, created_at: '2026-01-01T00:00:00Z', updated_at: `2026-01-0${day}T00:00:00Z`, properties };
}
