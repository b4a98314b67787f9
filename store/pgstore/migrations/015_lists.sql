-- Batches get a name and a number per account (1 for an account's first
-- batch), given by a trigger as each batch's row is inserted; existing
-- batches are numbered in the order of their ids.
ALTER TABLE {schema}.batches ADD COLUMN name text;
ALTER TABLE {schema}.batches ADD COLUMN number bigint;
CREATE TABLE {schema}.batch_numbers (
    account text PRIMARY KEY,
    last    bigint NOT NULL
);
WITH n AS (
    SELECT id, row_number() OVER (PARTITION BY account ORDER BY id) AS number FROM {schema}.batches
)
UPDATE {schema}.batches b SET number = n.number FROM n WHERE b.id = n.id;
INSERT INTO {schema}.batch_numbers (account, last)
SELECT account, max(number) FROM {schema}.batches GROUP BY account;

CREATE FUNCTION {schema}.number_batch() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.number IS NULL THEN
        INSERT INTO {schema}.batch_numbers AS n (account, last) VALUES (NEW.account, 1)
        ON CONFLICT (account) DO UPDATE SET last = n.last + 1
        RETURNING last INTO NEW.number;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER batches_number
    BEFORE INSERT ON {schema}.batches
    FOR EACH ROW EXECUTE FUNCTION {schema}.number_batch();

-- A list: a batch whose rows keep the uploaded columns. A list and its
-- rows are written by the transaction that creates its batch, charge and
-- jobs, so none of them exists without the others; they go when the
-- batch goes (Cleanup).
CREATE TABLE {schema}.lists (
    batch_id     bigint PRIMARY KEY,
    account      text NOT NULL,
    header       text[] NOT NULL,
    col          integer NOT NULL,
    rows         integer NOT NULL,
    addresses    integer NOT NULL,
    duplicates   integer NOT NULL,
    invalid_rows integer NOT NULL,
    charged      bigint NOT NULL
);
-- A list's rows in upload order; job_id is NULL for a row that is not an
-- address.
CREATE TABLE {schema}.list_rows (
    batch_id bigint NOT NULL,
    n        integer NOT NULL,
    record   text[] NOT NULL,
    job_id   bigint,
    PRIMARY KEY (batch_id, n)
);
