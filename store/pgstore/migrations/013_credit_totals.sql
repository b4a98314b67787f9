-- Per-account, per-day totals of the ledger, kept as entries are written,
-- so that the console's month and chart read a few rows however long an
-- account's history grows. A row holds, for one account, one UTC day and
-- one reason, the sum of the entries' deltas and how many there were.
CREATE TABLE {schema}.credit_totals (
    account text   NOT NULL,
    day     date   NOT NULL,
    reason  text   NOT NULL,
    total   bigint NOT NULL,
    entries bigint NOT NULL,
    PRIMARY KEY (account, day, reason)
);

-- Every statement that writes entries (a charge, a grant, a batch's
-- charge, a group of completions with their refunds) adds them to the
-- totals in the same statement, so a total cannot miss or double an entry
-- whatever path wrote it. Rows are updated in key order, and every path
-- but an account's creation has locked the account's balance row before
-- (a charge's conditional update, a refund's upsert in the same
-- statement), so a totals row never waits behind a lock of its own.
CREATE FUNCTION {schema}.credit_totals_add() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {schema}.credit_totals AS t (account, day, reason, total, entries)
    SELECT account, (created_at AT TIME ZONE 'UTC')::date, reason, sum(delta), count(*)
    FROM new_entries
    GROUP BY 1, 2, 3
    ORDER BY 1, 2, 3
    ON CONFLICT (account, day, reason) DO UPDATE
    SET total = t.total + EXCLUDED.total, entries = t.entries + EXCLUDED.entries;
    RETURN NULL;
END
$$;
-- Creating the trigger locks out writers of entries until this migration
-- commits, so the backfill below sees every entry written without it.
CREATE TRIGGER credit_totals_add
    AFTER INSERT ON {schema}.credit_entries
    REFERENCING NEW TABLE AS new_entries
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.credit_totals_add();

INSERT INTO {schema}.credit_totals (account, day, reason, total, entries)
SELECT account, (created_at AT TIME ZONE 'UTC')::date, reason, sum(delta), count(*)
FROM {schema}.credit_entries
GROUP BY 1, 2, 3;
