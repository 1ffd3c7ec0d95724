import { describe, expect, it } from 'vitest';
import { valuesRewrittenBy, type TypeChange } from '../../src/warehouse/property-history.js';

const change = (apiName: string): TypeChange => ({
  apiName,
  oldType: 'number',
  newType: 'text',
  oldColumn: apiName,
  newColumn: `${apiName}__varchar`,
});

describe('which definition changes rewrite stored values without moving updated_at', () => {
  it('a type change and a property the last listing named but this one does not; nothing else', () => {
    const before = [
      { apiName: 'kept0001', inLastListing: true },
      { apiName: 'gone0001', inLastListing: true },
      { apiName: 'retyped1', inLastListing: true },
      { apiName: 'gonelong', inLastListing: false },
      { apiName: 'cameback', inLastListing: false },
    ];
    const listed = new Set(['kept0001', 'retyped1', 'cameback', 'brandnew']);
    expect(valuesRewrittenBy(before, listed, [change('retyped1')])).toEqual(['gone0001', 'retyped1']);
  });

  it('a first listing, or one equal to the last, rewrites nothing', () => {
    expect(valuesRewrittenBy([], new Set(['a0000001']), [])).toEqual([]);
    expect(valuesRewrittenBy([{ apiName: 'a0000001', inLastListing: true }], new Set(['a0000001']), [])).toEqual([]);
  });
});
