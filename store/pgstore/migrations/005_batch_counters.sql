-- Each batch's counters, kept by the completions of its jobs under the
-- batch row's lock, so that exactly one completion sees the batch finish.
CREATE TABLE {schema}.batches (
    id           bigint PRIMARY KEY,
    account      text NOT NULL,
    source       text NOT NULL DEFAULT 'api',
    total        integer NOT NULL,
    completed    integer NOT NULL DEFAULT 0,
    counts       jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL,
    completed_at timestamptz
);
CREATE INDEX batches_account_idx ON {schema}.batches (account, id);
CREATE INDEX batches_completed_idx ON {schema}.batches (completed_at) WHERE completed_at IS NOT NULL;

WITH per AS (
    SELECT batch_id, account, result->'confidence'->>'status' AS status,
           count(*) AS n, min(created_at) AS created, max(completed_at) AS done
    FROM {schema}.jobs GROUP BY 1, 2, 3
)
INSERT INTO {schema}.batches (id, account, total, completed, counts, created_at, completed_at)
SELECT batch_id, account, sum(n), coalesce(sum(n) FILTER (WHERE status IS NOT NULL), 0),
       coalesce(jsonb_object_agg(status, n) FILTER (WHERE status IS NOT NULL), '{}'),
       min(created), CASE WHEN bool_and(status IS NOT NULL) THEN max(done) END
FROM per GROUP BY batch_id, account;

-- The source of a job's batch; NULL means the API.
ALTER TABLE {schema}.jobs ADD COLUMN source text;

-- Idempotency records expire; the ledger no longer holds batch keys.
ALTER TABLE {schema}.job_batches ADD COLUMN expires_at timestamptz;
UPDATE {schema}.job_batches SET expires_at = created_at + interval '24 hours';
ALTER TABLE {schema}.job_batches ALTER COLUMN expires_at SET NOT NULL;
CREATE INDEX job_batches_expires_idx ON {schema}.job_batches (expires_at);

-- The event types an endpoint receives; NULL means all.
ALTER TABLE {schema}.webhook_endpoints ADD COLUMN events text[];
