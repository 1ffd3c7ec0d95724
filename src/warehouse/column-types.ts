/** Property type → DuckDB column type. The spec names six types; anything else is kept losslessly as JSON. */
export type SqlType = 'VARCHAR' | 'DOUBLE' | 'DATE' | 'TIMESTAMPTZ' | 'BOOLEAN' | 'JSON';

const KNOWN_TYPES: Readonly<Record<string, SqlType>> = {
  text: 'VARCHAR',
  select: 'VARCHAR', // the internal option value; labels live in property_definitions.options
  number: 'DOUBLE',
  date: 'DATE',
  datetime: 'TIMESTAMPTZ',
  boolean: 'BOOLEAN',
};

export function sqlTypeFor(propertyType: string): SqlType {
  return Object.hasOwn(KNOWN_TYPES, propertyType) ? (KNOWN_TYPES[propertyType] as SqlType) : 'JSON';
}

/** A short lowercase tag for naming a column added when a property's type changes (`amount__varchar`). */
export function sqlTypeTag(sqlType: SqlType): string {
  return sqlType.toLowerCase();
}
