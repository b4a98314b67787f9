-- A job's count of attempts in a row that came back without a DNS verdict
-- on its domain, a column of its own. The releases before it kept the
-- count at the end of last_error, "<cause> (unjudged attempt N of M)":
-- jobs still waiting take it from there once, here.
-- {schema} is replaced by the quoted schema name.
ALTER TABLE {schema}.jobs ADD COLUMN unjudged integer NOT NULL DEFAULT 0;
UPDATE {schema}.jobs
SET unjudged = substring(last_error FROM '.* \(unjudged attempt ([0-9]{1,9}) of [0-9]+\)$')::integer
WHERE state <> 'completed' AND last_error ~ ' \(unjudged attempt [0-9]{1,9} of [0-9]+\)$';
