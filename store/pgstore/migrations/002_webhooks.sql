-- Batch fingerprints, webhook endpoints and the webhook delivery outbox.
-- {schema} is replaced by the quoted schema name.

-- The content fingerprint a batch was enqueued with. Batches recorded
-- before this column existed keep NULL: their fingerprint is unknown, so
-- a repeat of their key is judged by its count alone.
ALTER TABLE {schema}.job_batches ADD COLUMN fingerprint text;

-- Each account's webhook endpoint. previous_secrets holds the replaced
-- secrets that still sign, as [{"secret": ..., "expires_at": ...}], oldest
-- first.
CREATE TABLE {schema}.webhook_endpoints (
    account_id       text PRIMARY KEY,
    url              text NOT NULL,
    enabled          boolean NOT NULL,
    secret           text NOT NULL,
    previous_secrets jsonb NOT NULL DEFAULT '[]',
    disabled_reason  text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);

-- One row per event: pending until delivered or dead. A job completion
-- inserts its event in the transaction that completes the job. All times
-- are the dispatcher's clock, passed in, never the database's; attempts
-- holds the delivery's HTTP attempts, oldest first.
CREATE TABLE {schema}.webhook_deliveries (
    event_id      text PRIMARY KEY,
    account_id    text NOT NULL,
    type          text NOT NULL DEFAULT '',
    job_id        text,
    created_at    timestamptz NOT NULL,
    payload       bytea NOT NULL,
    state         text NOT NULL DEFAULT 'pending'
                  CHECK (state IN ('pending', 'delivered', 'dead')),
    next_attempt  timestamptz,
    finished_at   timestamptz,
    reason        text NOT NULL DEFAULT '',
    lease_token   text,
    lease_expires timestamptz,
    attempts      jsonb NOT NULL DEFAULT '[]',
    CHECK ((state = 'pending') = (next_attempt IS NOT NULL AND finished_at IS NULL)),
    CHECK ((lease_token IS NULL) = (lease_expires IS NULL)),
    CHECK (state = 'pending' OR lease_token IS NULL)
);
CREATE INDEX webhook_deliveries_due_idx
    ON {schema}.webhook_deliveries (next_attempt, event_id) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_account_idx
    ON {schema}.webhook_deliveries (account_id, created_at DESC, event_id DESC);
CREATE INDEX webhook_deliveries_finished_idx
    ON {schema}.webhook_deliveries (finished_at) WHERE state <> 'pending';

-- The events of the first outbox were never delivered: they become
-- pending deliveries, due at once.
INSERT INTO {schema}.webhook_deliveries (event_id, account_id, type, job_id, created_at, payload, next_attempt)
SELECT DISTINCT ON (event_id) event_id, account, 'validation.completed', job_id::text, created_at, payload, created_at
FROM {schema}.outbox ORDER BY event_id, id;

DROP TABLE {schema}.outbox;
