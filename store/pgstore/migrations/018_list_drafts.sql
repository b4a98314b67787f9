-- Lists uploaded on the console wait for their confirmation here, shared
-- by every instance: a draft's record (its account, network, the caller's
-- description and its number of chunks) and its body in chunks, written
-- before the record. Both expire; expired rows are removed as drafts are
-- put.
CREATE TABLE {schema}.list_drafts (
    id         text PRIMARY KEY,
    account    text NOT NULL,
    network    text NOT NULL,
    meta       bytea NOT NULL,
    chunks     integer NOT NULL,
    expires_at timestamptz NOT NULL,
    seq        bigserial NOT NULL
);
CREATE INDEX list_drafts_account ON {schema}.list_drafts (account);
CREATE INDEX list_drafts_network ON {schema}.list_drafts (network, seq);
CREATE INDEX list_drafts_expires ON {schema}.list_drafts (expires_at);
CREATE TABLE {schema}.list_draft_chunks (
    draft_id   text NOT NULL,
    n          integer NOT NULL,
    data       bytea NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (draft_id, n)
);
CREATE INDEX list_draft_chunks_expires ON {schema}.list_draft_chunks (expires_at);
