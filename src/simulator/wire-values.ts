import type { ResourceSchema } from './schema.js';
import { formatTimestamp } from './timestamps.js';
import type { PropertyValue } from './types.js';
import type { StoredValue } from './values.js';

/** Stored values → the shape a client would send (datetimes as ISO strings), for writes the simulator makes itself. */
export function toWire(schema: ResourceSchema, values: Record<string, StoredValue>): Record<string, PropertyValue> {
  const out: Record<string, PropertyValue> = {};
  for (const [name, value] of Object.entries(values)) {
    const spec = schema.get(name);
    out[name] = spec?.type === 'datetime' && typeof value === 'number' ? formatTimestamp(value, false) : value;
  }
  return out;
}
