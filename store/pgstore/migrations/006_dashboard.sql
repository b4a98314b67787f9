-- The dashboard's password hashes (opaque PHC strings) and sessions.
ALTER TABLE {schema}.accounts ADD COLUMN password_hash text;

CREATE TABLE {schema}.sessions (
    token  text PRIMARY KEY,
    data   bytea NOT NULL,
    expiry timestamptz NOT NULL
);
CREATE INDEX sessions_expiry_idx ON {schema}.sessions (expiry);
