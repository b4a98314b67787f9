-- Every job belongs to the batch its enqueue created, named after the
-- batch's first job. Jobs from before this migration are batches of one.
ALTER TABLE {schema}.jobs ADD COLUMN batch_id bigint;
UPDATE {schema}.jobs SET batch_id = id WHERE batch_id IS NULL;
ALTER TABLE {schema}.jobs ALTER COLUMN batch_id SET NOT NULL;
CREATE INDEX jobs_batch_idx ON {schema}.jobs (account, batch_id, id);
