-- Accounts, API keys, credits, jobs and the completion outbox.
-- {schema} is replaced by the quoted schema name.

CREATE TABLE {schema}.accounts (
    id         uuid PRIMARY KEY,
    email      text NOT NULL,
    email_norm text NOT NULL UNIQUE,
    plan       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Only the SHA-256 of a secret and its display prefix are stored.
CREATE TABLE {schema}.api_keys (
    seq          bigserial NOT NULL UNIQUE,
    id           uuid PRIMARY KEY,
    account_id   uuid NOT NULL REFERENCES {schema}.accounts (id) ON DELETE CASCADE,
    name         text NOT NULL DEFAULT '',
    prefix       text NOT NULL,
    hash         bytea NOT NULL CHECK (length(hash) = 32),
    permissions  text[] NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE UNIQUE INDEX api_keys_hash_key ON {schema}.api_keys (hash);
CREATE INDEX api_keys_account_idx ON {schema}.api_keys (account_id, seq);

-- The balance is kept beside the history so that a charge is one
-- conditional update; the CHECK is a backstop, never the mechanism.
CREATE TABLE {schema}.credit_balances (
    account text PRIMARY KEY,
    balance bigint NOT NULL CHECK (balance >= 0)
);

CREATE TABLE {schema}.credit_entries (
    id              bigserial PRIMARY KEY,
    account         text NOT NULL,
    delta           bigint NOT NULL CHECK (delta <> 0),
    reason          text NOT NULL,
    reference       text NOT NULL DEFAULT '',
    idempotency_key text,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX credit_entries_account_idx ON {schema}.credit_entries (account, id);
CREATE UNIQUE INDEX credit_entries_idempotency_key
    ON {schema}.credit_entries (account, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- The history is append-only.
CREATE FUNCTION {schema}.credit_entries_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'credit entries are append-only' USING ERRCODE = 'restrict_violation';
END
$$;
CREATE TRIGGER credit_entries_append_only
    BEFORE UPDATE OR DELETE ON {schema}.credit_entries
    FOR EACH ROW EXECUTE FUNCTION {schema}.credit_entries_append_only();
CREATE TRIGGER credit_entries_no_truncate
    BEFORE TRUNCATE ON {schema}.credit_entries
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.credit_entries_append_only();

CREATE TABLE {schema}.jobs (
    id               bigserial PRIMARY KEY,
    account          text NOT NULL,
    email            text NOT NULL,
    state            text NOT NULL DEFAULT 'available'
                     CHECK (state IN ('available', 'running', 'completed')),
    cost             bigint NOT NULL DEFAULT 0 CHECK (cost >= 0),
    errors           integer NOT NULL DEFAULT 0,
    last_error       text NOT NULL DEFAULT '',
    token            text,
    lease_expires_at timestamptz,
    run_at           timestamptz NOT NULL DEFAULT now(),
    result           jsonb,
    mx_hosts         text[],
    created_at       timestamptz NOT NULL DEFAULT now(),
    completed_at     timestamptz,
    CHECK ((state = 'running') = (token IS NOT NULL AND lease_expires_at IS NOT NULL)),
    CHECK ((state = 'completed') = (result IS NOT NULL AND completed_at IS NOT NULL))
);
CREATE INDEX jobs_available_idx ON {schema}.jobs (id) WHERE state = 'available';
CREATE INDEX jobs_running_idx ON {schema}.jobs (lease_expires_at) WHERE state = 'running';
CREATE INDEX jobs_completed_idx ON {schema}.jobs (completed_at) WHERE state = 'completed';

-- The jobs of each batch enqueued under an idempotency key.
CREATE TABLE {schema}.job_batches (
    account         text NOT NULL,
    idempotency_key text NOT NULL,
    job_ids         bigint[] NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account, idempotency_key)
);

-- Events written in the same transaction as a job's completion.
CREATE TABLE {schema}.outbox (
    id         bigserial PRIMARY KEY,
    account    text NOT NULL,
    job_id     bigint NOT NULL,
    event_id   text NOT NULL,
    payload    bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX outbox_account_idx ON {schema}.outbox (account, id);

-- Idle workers LISTEN on a channel named after the schema; every insert
-- statement into jobs wakes them once, when its transaction commits.
CREATE FUNCTION {schema}.jobs_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('validmail_jobs_' || md5(TG_TABLE_SCHEMA), '');
    RETURN NULL;
END
$$;
CREATE TRIGGER jobs_notify
    AFTER INSERT ON {schema}.jobs
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.jobs_notify();
