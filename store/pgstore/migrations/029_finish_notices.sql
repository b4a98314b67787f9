-- The mail an account may choose when one of its batches finishes: the
-- choice (off until chosen), and one notice per batch, claimed by one
-- instance for a lease, retried until done, then kept a while as done so
-- that the batch is never noticed twice.
ALTER TABLE {schema}.accounts ADD COLUMN finish_mail boolean NOT NULL DEFAULT false;

CREATE TABLE {schema}.batch_notices (
    batch    text PRIMARY KEY,
    account  text NOT NULL,
    -- pending: when due (a claim's lease's end while claimed); done: when
    -- the notice is forgotten.
    due      timestamptz NOT NULL,
    done     boolean NOT NULL DEFAULT false,
    token    text NOT NULL DEFAULT '',
    attempts integer NOT NULL DEFAULT 0
);
CREATE INDEX batch_notices_due ON {schema}.batch_notices (due) WHERE NOT done;
