-- Tables behind the analyst views and schema-evolution records. Run on every read-write open: idempotent.
-- Per-resource history tables (deals_history, ...) and the views are created by src/warehouse/history.ts
-- and src/warehouse/views.ts, because their shape follows the record tables.

-- Every property type change seen: the old column is kept (frozen), the new type gets its own column.
CREATE TABLE IF NOT EXISTS property_type_changes (
  resource VARCHAR NOT NULL,
  api_name VARCHAR NOT NULL,
  old_type VARCHAR NOT NULL,
  new_type VARCHAR NOT NULL,
  old_column VARCHAR NOT NULL,
  new_column VARCHAR NOT NULL,
  changed_at TIMESTAMPTZ NOT NULL
);

-- The current options of select properties, one row per option, replaced whenever definitions are listed.
-- The views join this table for labels, so labels are data and never SQL. property_key identifies one
-- (resource, api_name) and is what a view's join names (a number we assign, not the service's text).
-- No primary key: rows are deleted and rewritten in one transaction (values are deduplicated before).
CREATE TABLE IF NOT EXISTS property_options (
  resource VARCHAR NOT NULL,
  api_name VARCHAR NOT NULL,
  property_key INTEGER NOT NULL,
  position INTEGER NOT NULL,
  value VARCHAR NOT NULL,
  label VARCHAR
);
