/**
 * The odds below which passes that named no new id are taken to say the rest is out of their reach: that so many
 * passes in a row, each leaving out a record at the rate the first left out its share (`LEFT_OUT_AT_LEAST` at the
 * least), all left out the ones still missing.
 */
const GIVE_UP_ODDS = 0.001;

/**
 * The least share of its records a pass is taken to leave out, whatever the first pass left out: a list holds
 * records no boundary splits (never left out), so the first pass's share understates the odds of the ones still
 * missing, which sit in the ties a boundary splits. A tie much larger than a page loses about e⁻¹ of it to each
 * pass; one split in two by a boundary, at most a quarter.
 */
const LEFT_OUT_AT_LEAST = 0.37;

/**
 * Whether passes taken together (`PassUnion`, `TiePasses`) may still name the `missing` ids another pass would find:
 * the last pass named a new one, or the `idle` passes in a row since could well have left out every one still missing
 * by chance (with one missing, seven such passes in a row happen once in 1,000 walks; with ten, one such pass once in
 * 20,000). `leftOutByFirst`: the share of its places the first pass named no id for. Pure.
 */
export function mayNameMore(idle: number, missing: number, leftOutByFirst: number): boolean {
  const leftOut = Math.min(Math.max(leftOutByFirst, LEFT_OUT_AT_LEAST), 0.99);
  return idle === 0 || leftOut ** (idle * missing) >= GIVE_UP_ODDS;
}
