-- The warehouse's fixed tables. Run on every read-write open: every statement must be idempotent.
-- Record tables (deals, companies, ...) are not here: their columns come from property definitions
-- (src/warehouse/schema.ts).

-- Property definitions as last listed by the service. column_name is assigned once and reused forever.
CREATE TABLE IF NOT EXISTS property_definitions (
  resource VARCHAR NOT NULL,
  api_name VARCHAR NOT NULL,
  column_name VARCHAR NOT NULL,
  display_name VARCHAR,
  property_type VARCHAR NOT NULL,
  is_core BOOLEAN,
  is_required_on_create BOOLEAN,
  options JSON,
  first_seen_at TIMESTAMPTZ NOT NULL,
  last_seen_at TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (resource, api_name)
);

-- Users have no updated_at: replaced by a complete listing each run; vanished users get _deleted_at.
CREATE TABLE IF NOT EXISTS users (
  id VARCHAR PRIMARY KEY,
  email VARCHAR,
  name VARCHAR,
  is_active BOOLEAN,
  _synced_at TIMESTAMPTZ,
  _deleted_at TIMESTAMPTZ
);

-- Summaries exist only on a meeting log's single-record view; a log's rows are replaced as a whole.
CREATE TABLE IF NOT EXISTS meeting_log_summaries (
  meeting_log_id VARCHAR NOT NULL,
  summary_type VARCHAR,
  result_type VARCHAR,
  text VARCHAR,
  selections STRUCT(value VARCHAR, level BIGINT, "order" BIGINT)[],
  reason VARCHAR,
  status VARCHAR,
  updated_at TIMESTAMPTZ,
  position INTEGER NOT NULL
);

-- Incremental state, committed in the same transaction as the rows it describes.
-- Watermark and walk fields stay ISO strings: they go back to the service exactly as they came.
CREATE TABLE IF NOT EXISTS sync_state (
  resource VARCHAR PRIMARY KEY,
  watermark VARCHAR,
  walk_cursor VARCHAR,
  walk_updated_after VARCHAR,
  walk_started_at VARCHAR,
  walk_mode VARCHAR,
  last_completed_at VARCHAR,
  updated_at TIMESTAMPTZ
);

-- A walk is one or more passes over its window (see WalkCheckpoint): where the pass under way stands, so an
-- interrupted pass resumes with what it had seen. Added after the first release: ALTER keeps existing warehouses in
-- step, and a row written before reads back with the defaults (pass 1, started with the walk, clean, service clock).
ALTER TABLE sync_state ADD COLUMN IF NOT EXISTS walk_pass INTEGER;
ALTER TABLE sync_state ADD COLUMN IF NOT EXISTS walk_pass_started_at VARCHAR;
ALTER TABLE sync_state ADD COLUMN IF NOT EXISTS walk_dirty BOOLEAN;
ALTER TABLE sync_state ADD COLUMN IF NOT EXISTS walk_max_updated_at VARCHAR;
ALTER TABLE sync_state ADD COLUMN IF NOT EXISTS walk_local_clock BOOLEAN;
-- Records the walk received before its checkpoint, over every run: a resumed walk's progress goes on from them.
ALTER TABLE sync_state ADD COLUMN IF NOT EXISTS walk_received BIGINT;
-- The fingerprint of the key whose answer named walk_cursor (a pool of keys): a service may take a cursor only on it.
ALTER TABLE sync_state ADD COLUMN IF NOT EXISTS walk_cursor_key VARCHAR;
-- Where the next incremental walk starts instead of the watermark (the watermark before the last walk), when that
-- walk's clean pass spanned pages a record deleted behind an offset cursor could have shifted (see planWalk).
ALTER TABLE sync_state ADD COLUMN IF NOT EXISTS confirm_from VARCHAR;

CREATE TABLE IF NOT EXISTS sync_runs (
  run_id VARCHAR PRIMARY KEY,
  resource VARCHAR NOT NULL,
  mode VARCHAR NOT NULL,
  started_at TIMESTAMPTZ NOT NULL,
  finished_at TIMESTAMPTZ,
  pages BIGINT,
  records BIGINT,
  requests BIGINT,
  retries BIGINT,
  rate_limited BIGINT,
  outcome VARCHAR NOT NULL,
  error_code VARCHAR,
  error_message VARCHAR
);

-- Drift found by a reconcile sweep (rows whose content changed unseen by incremental walks; rows that vanished).
-- Added after the first release: ALTER keeps existing warehouses in step.
ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS changed BIGINT;
ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS deleted BIGINT;
-- The process running it: a run left 'running' by a process that is gone is marked 'abandoned' by the next
-- run started on that host.
ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS host VARCHAR;
ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS pid INTEGER;
ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS process_id VARCHAR;
-- Records left in quarantine, passes walked, and whether the last pass was clean (the watermark moved).
ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS rejected BIGINT;
ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS passes INTEGER;
ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS settled BOOLEAN;

-- Ids seen so far by an unfinished reconcile sweep (sweep_key e.g. 'deals#reconcile'), written in the same
-- transaction as each batch, so a resumed sweep still knows what it saw before a crash. Cleared at completion.
-- No primary key: an id seen twice is harmless, and appends stay cheap.
CREATE TABLE IF NOT EXISTS reconcile_seen (
  sweep_key VARCHAR NOT NULL,
  id VARCHAR NOT NULL
);

-- Quarantine: records the service sent that cannot be mirrored as they are, verbatim (raw JSON) with the reason.
-- One row per (resource, id), or per (resource, raw) for a record without a usable id; a record rejected again
-- updates its row (first_seen_at kept). A walk that writes the record (a sweep: that lists it) takes it out.
-- No primary key: id may be NULL, and the table stays small.
CREATE TABLE IF NOT EXISTS rejected_records (
  resource VARCHAR NOT NULL,
  id VARCHAR,
  raw VARCHAR NOT NULL,
  reason VARCHAR NOT NULL,
  run_id VARCHAR,
  first_seen_at TIMESTAMPTZ NOT NULL,
  last_seen_at TIMESTAMPTZ NOT NULL
);

-- When each meeting log's summaries were last read (server time) and how many reads in a row since found them
-- unchanged: the next read is due last_read_at + base x 2^unchanged_reads (the base is the caller's), so summaries
-- that stopped changing are read ever more rarely, whatever the service calls their statuses.
CREATE TABLE IF NOT EXISTS meeting_log_summary_reads (
  meeting_log_id VARCHAR PRIMARY KEY,
  last_read_at TIMESTAMPTZ NOT NULL,
  unchanged_reads INTEGER NOT NULL
);

-- Commit order of every version in every <table>_history (change_seq): the change feed's cursor. One counter for
-- all tables, so the feed interleaves resources in the order their commits happened. A commit numbers its versions
-- from `last` and moves it past them; a row never calls nextval: DuckDB corrupted rows of a large commit, at low
-- memory limits, that called it per row (docs/performance.md). The sequence stays to seed the counter above the
-- change_seq a warehouse of an earlier release holds.
CREATE SEQUENCE IF NOT EXISTS history_change_seq;
CREATE TABLE IF NOT EXISTS history_change_counter (last BIGINT NOT NULL);
INSERT INTO history_change_counter
  SELECT nextval('history_change_seq') WHERE NOT EXISTS (SELECT 1 FROM history_change_counter);

-- history_ahead served the history of observed versions (one per updated_at); SCD2 history follows the live row
-- commit by commit and needs no look-ahead.
DROP TABLE IF EXISTS history_ahead;
