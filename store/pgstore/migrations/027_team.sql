-- Teams: the people an account's owner invited, each with a password of
-- their own, and the invitations that add them. The owner is the
-- account's own login (accounts.email and its password) and has no row
-- here, so every account that existed before keeps its login as owner.
CREATE TABLE {schema}.members (
    id         uuid PRIMARY KEY,
    account_id uuid NOT NULL REFERENCES {schema}.accounts (id) ON DELETE CASCADE,
    email      text NOT NULL,
    email_norm text NOT NULL,
    role       text NOT NULL CHECK (role IN ('admin', 'member')),
    password   text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT members_email_norm_key UNIQUE (email_norm)
);
CREATE INDEX members_account_idx ON {schema}.members (account_id, created_at);

CREATE TABLE {schema}.member_invitations (
    hash       text PRIMARY KEY CHECK (length(hash) = 64),
    account_id uuid NOT NULL REFERENCES {schema}.accounts (id) ON DELETE CASCADE,
    email      text NOT NULL,
    role       text NOT NULL CHECK (role IN ('admin', 'member')),
    expiry     timestamptz NOT NULL
);
CREATE INDEX member_invitations_expiry_idx ON {schema}.member_invitations (expiry);

-- Each account's audit log: who created or revoked keys, changed the
-- webhook, bought credits, changed the team. The newest 1000 entries of
-- an account are kept (store.MaxAuditEntries): each insert drops what
-- falls beyond.
CREATE TABLE {schema}.audit_log (
    account text NOT NULL,
    seq     bigint GENERATED ALWAYS AS IDENTITY,
    at      timestamptz NOT NULL,
    actor   text NOT NULL,
    action  text NOT NULL,
    detail  text NOT NULL,
    PRIMARY KEY (account, seq)
);
