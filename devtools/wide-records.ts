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

const MIXED_TYPES = ['text', 'number', 'select', 'date'] as const;

/** `custom_<from>` … `custom_<to - 1>`, of `types` in turn; each select has `selectOptions`. */
export function customDefinitions(
  types: readonly PropertyDefinition['property_type'][],
  from: number,
  to: number,
  selectOptions: PropertyDefinition['options'],
): PropertyDefinition[] {
  return Array.from({ length: to - from }, (_, k) => {
    const i = from + k;
    const type = types[i % types.length]!;
    return {
      api_name: `custom_${i}`,
      display_name: `Custom ${i}`,
      property_type: type,
      is_core: false,
      is_required_on_create: false,
      options: type === 'select' ? selectOptions : [],
    };
  });
}

/** A wide organization's custom properties: text, number, select and date in turn. */
export function mixedDefinitions(width: number): PropertyDefinition[] {
  return customDefinitions(
    MIXED_TYPES,
    0,
    width,
    ['open', 'won', 'lost'].map((value) => ({ value, label: value.toUpperCase() })),
  );
}

/**
 * Deal `n` with a value for about `fill` (0–1) of `defs` (mixedDefinitions), a different share for each deal,
 * updated on 2026-01-0`day`.
 */
export function mixedRecord(n: number, day: number, defs: readonly PropertyDefinition[], fill = 1): ServiceRecord {
  const properties = Object.fromEntries(
    defs
      .flatMap((d, i) => ((n * 37 + i) % 100 < fill * 100 ? [d] : []))
      .map((d) => {
        const i = Number(d.api_name.slice('custom_'.length));
        switch (d.property_type) {
          case 'number':
            return [d.api_name, n * 10 + i];
          case 'select':
            return [d.api_name, ['open', 'won', 'lost'][(n + i) % 3]];
          case 'date':
            return [d.api_name, `2026-0${1 + ((n + i) % 9)}-${String(1 + ((n + i) % 28)).padStart(2, '0')}`];
          default:
            return [d.api_name, `value ${n} ${i}`];
        }
      }),
  );
  return { id: `D${String(n).padStart(17, '0')}`, created_at: '2026-01-01T00:00:00Z', updated_at: `2026-01-0${day}T00:00:00Z`, properties };
}
