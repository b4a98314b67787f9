-- Sessions under the SHA-256 of their token, with the account they
-- signed in; confirmations of account emails; mailed single-use tokens.

-- Sessions were kept under their token as it is: they end here, and
-- everyone signs in to the console again once.
DELETE FROM {schema}.sessions;
ALTER TABLE {schema}.sessions RENAME COLUMN token TO id;
ALTER TABLE {schema}.sessions ADD COLUMN account text NOT NULL DEFAULT '';
ALTER TABLE {schema}.sessions ADD CONSTRAINT sessions_id_hash CHECK (length(id) = 64);
CREATE INDEX sessions_account_idx ON {schema}.sessions (account) WHERE account <> '';

-- An account whose email awaits confirmation holds its signup grant here
-- until ConfirmAccount writes it; NULL means confirmed.
ALTER TABLE {schema}.accounts ADD COLUMN held_credits bigint;

CREATE TABLE {schema}.account_tokens (
    hash       text PRIMARY KEY CHECK (length(hash) = 64),
    purpose    text NOT NULL,
    account_id uuid NOT NULL REFERENCES {schema}.accounts (id) ON DELETE CASCADE,
    expiry     timestamptz NOT NULL
);
CREATE INDEX account_tokens_expiry_idx ON {schema}.account_tokens (expiry);
