-- Jobs are leased in turns shared fairly between accounts: a job's turn
-- orders the lease, job_turns keeps each account's last turn given, and
-- job_clock the queue's position (the latest turn leased, which never
-- goes back), so that a batch's jobs follow the later of the account's
-- waiting jobs and the queue's position. Waiting jobs take turns 1, 2, …
-- within their account, in id order, so that existing backlogs alternate
-- too.
-- {schema} is replaced by the quoted schema name.
ALTER TABLE {schema}.jobs ADD COLUMN turn bigint NOT NULL DEFAULT 0;
CREATE TABLE {schema}.job_turns (
    account   text PRIMARY KEY,
    last_turn bigint NOT NULL
);
WITH t AS (
    SELECT id, row_number() OVER (PARTITION BY account ORDER BY id) AS turn
    FROM {schema}.jobs WHERE state = 'available'
)
UPDATE {schema}.jobs j SET turn = t.turn FROM t WHERE j.id = t.id;
INSERT INTO {schema}.job_turns (account, last_turn)
SELECT account, max(turn) FROM {schema}.jobs WHERE state = 'available' GROUP BY account;
CREATE TABLE {schema}.job_clock (
    one  boolean PRIMARY KEY DEFAULT true CHECK (one),
    turn bigint NOT NULL
);
INSERT INTO {schema}.job_clock (turn) VALUES (0);
CREATE INDEX jobs_turn_idx ON {schema}.jobs (turn, id) WHERE state = 'available';
