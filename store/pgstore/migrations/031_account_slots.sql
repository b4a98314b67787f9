-- Each account's jobs being validated across the deployment, so that a
-- plan's concurrent jobs bound holds over every instance: a row per job
-- holding a slot, until released or expired (an instance that died frees
-- its slots by their expiry). UNLOGGED, as the rate limits: a crash
-- loses only slots that expire anyway.
CREATE UNLOGGED TABLE {schema}.account_slots (
    account text NOT NULL,
    holder  text NOT NULL,
    expiry  timestamptz NOT NULL,
    PRIMARY KEY (account, holder)
);

-- account_slot_acquire takes one of the account's p_limit slots for
-- p_holder (renewing one it holds) for p_ttl, or returns false. The
-- account's advisory lock orders concurrent acquisitions; each statement
-- after it sees the others' committed slots.
CREATE FUNCTION {schema}.account_slot_acquire(p_account text, p_holder text, p_limit int, p_ttl interval)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('{schema}.account_slots:' || p_account, 0));
    DELETE FROM {schema}.account_slots WHERE account = p_account AND expiry <= clock_timestamp();
    IF NOT EXISTS (SELECT 1 FROM {schema}.account_slots WHERE account = p_account AND holder = p_holder)
       AND (SELECT count(*) FROM {schema}.account_slots WHERE account = p_account) >= p_limit THEN
        RETURN false;
    END IF;
    INSERT INTO {schema}.account_slots (account, holder, expiry) VALUES (p_account, p_holder, clock_timestamp() + p_ttl)
    ON CONFLICT (account, holder) DO UPDATE SET expiry = EXCLUDED.expiry;
    RETURN true;
END
$$;
