/** How every view (live, history, `deal_stage_history`) shows select values as their labels from `property_options`. */

/** How a view takes select labels from `property_options`: a subquery to join, and a lookup per column. */
export interface OptionLabels {
  /** `CROSS JOIN (…) AS labels`, or '' when no column has options. */
  join: string;
  /** The label of `value` among the options of `optionKey` (a key given to `optionLabels`), NULL when it has none. */
  lookup(optionKey: number, value: string): string;
  /**
   * What a view shows for `value`: its label; else, for a `;`-joined value (a multi-select's, as HubSpot-like
   * services write them), the label of each part, joined alike; else the value itself (one outside the options).
   */
  shown(optionKey: number, value: string): string;
}

/**
 * One map of maps (option key → value → label), built once per query in a single-row subquery, and a lookup per
 * column: a LEFT JOIN per select property cannot be planned for hundreds of them (docs/performance.md, "Wide
 * organizations"). Values are unique per key (`optionRows`), so each map holds every option of its property.
 */
export function optionLabels(optionKeys: Iterable<number | null>): OptionLabels {
  const keys = [...new Set([...optionKeys].flatMap((k) => (k === null ? [] : [Math.trunc(k)])))];
  const join = `CROSS JOIN (
  SELECT map_from_entries(list({'k': property_key, 'v': options})) AS options
  FROM (SELECT property_key, map_from_entries(list({'k': value, 'v': label})) AS options
        FROM property_options WHERE property_key IN (${keys.join(', ')}) GROUP BY property_key)
) AS labels`;
  const lookup = (optionKey: number, value: string): string => {
    const key = Math.trunc(optionKey);
    if (!keys.includes(key)) throw new Error(`option key ${key} was not given to optionLabels`);
    return `labels.options[${key}][${value}]`;
  };
  return {
    join: keys.length === 0 ? '' : join,
    lookup,
    shown: (optionKey, value) =>
      `coalesce(${lookup(optionKey, value)}, CASE WHEN contains(${value}, ';') THEN ` +
      `array_to_string(list_transform(string_split(${value}, ';'), part -> coalesce(${lookup(optionKey, 'part')}, part)), ';') ELSE ${value} END)`,
  };
}
