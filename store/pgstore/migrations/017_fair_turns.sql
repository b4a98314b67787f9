-- Jobs are leased in turns shared fairly between accounts: a job's turn
-- orders the lease, and job_turns keeps each account's last turn given,
-- so that a batch's jobs follow the later of the account's waiting jobs
-- and the queue's position. Waiting jobs take turns 1, 2, … within their
-- account, in id order, so that existing backlogs alternate too.
-- {schema} is replaced by the quoted schema name.
ALTER TABLE {schema}.jobs ADD COLUMN turn bigint NOT NULL DEFAULT 0;
CREATE TABLE {schema}.job_turns (
    account   text PRIMARY KEY,
    last_turn bigint NOT NULL
);
CREATE INDEX job_turns_last_idx ON {schema}.job_turns (last_turn);
WITH t AS (
    SELECT id, row_number() OVER (PARTITION BY account ORDER BY id) AS turn
    FROM {schema}.jobs WHERE state = 'available'
)
UPDATE {schema}.jobs j SET turn = t.turn FROM t WHERE j.id = t.id;
INSERT INTO {schema}.job_turns (account, last_turn)
SELECT account, max(turn) FROM {schema}.jobs WHERE state = 'available' GROUP BY account;
CREATE INDEX jobs_turn_idx ON {schema}.jobs (turn, id) WHERE state = 'available';
