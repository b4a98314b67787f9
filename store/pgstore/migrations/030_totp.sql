-- Second factors: each login's TOTP secret, the SHA-256 hashes of its
-- unused recovery codes and the last time step whose code was accepted
-- (a code is accepted once). A login is an account's owner (the
-- account's id) or a member (the member's id).
CREATE TABLE {schema}.totp (
    login      text PRIMARY KEY,
    account_id uuid NOT NULL REFERENCES {schema}.accounts (id) ON DELETE CASCADE,
    secret     text NOT NULL,
    recovery   text[] NOT NULL,
    last_step  bigint NOT NULL
);
CREATE INDEX totp_account_idx ON {schema}.totp (account_id);

-- Whether an account's owner requires a second factor of the whole team.
ALTER TABLE {schema}.accounts ADD COLUMN require_totp boolean NOT NULL DEFAULT false;

-- An account's pending invitations, listed on its team page and removed
-- with a member of their address.
CREATE INDEX member_invitations_account_idx ON {schema}.member_invitations (account_id, expiry);
