-- A job handed back for later is "delayed": it waits outside the turn
-- index, so that a lease never reads past jobs whose run-at has not come,
-- and takes its turn when it comes due (see promoteSQL). The turn index is
-- rebuilt without them; the delayed ones are found by their run-at.
-- {schema} is replaced by the quoted schema name.
ALTER TABLE {schema}.jobs ADD COLUMN delayed boolean NOT NULL DEFAULT false;
UPDATE {schema}.jobs SET delayed = true WHERE state = 'available' AND run_at > now();
DROP INDEX {schema}.jobs_turn_idx;
CREATE INDEX jobs_turn_idx ON {schema}.jobs (turn, id) WHERE state = 'available' AND NOT delayed;
CREATE INDEX jobs_delayed_idx ON {schema}.jobs (run_at) WHERE state = 'available' AND delayed;
