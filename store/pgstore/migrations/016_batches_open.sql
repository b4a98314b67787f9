-- The batches not yet finished, in id order: retention asks each day's
-- partition of batches whether it holds one before dropping it, and this
-- answers with a probe instead of a scan of the partition. It stays
-- small: a batch leaves it as its last job completes.
-- {schema} is replaced by the quoted schema name.
CREATE INDEX batches_open_idx ON {schema}.batches (id) WHERE completed_at IS NULL;
