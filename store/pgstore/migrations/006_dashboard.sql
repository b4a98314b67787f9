-- The dashboard's password hashes (opaque PHC strings) and sessions.
ALTER TABLE {schema}.accounts ADD COLUMN password_hash text;

CREATE TABLE {schema}.sessions (
    token  text PRIMARY KEY,
    data   bytea NOT NULL,
    expiry timestamptz NOT NULL
);
CREATE INDEX sessions_expiry_idx ON {schema}.sessions (expiry);

-- Validations by account, month and status.
CREATE TABLE {schema}.usage (
    account text NOT NULL,
    month   text NOT NULL,
    status  text NOT NULL,
    n       bigint NOT NULL,
    PRIMARY KEY (account, month, status)
);
