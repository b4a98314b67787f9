-- The high-churn tables, jobs and batches, partitioned by day. A job's id
-- carries the day it was enqueued: (days since 1970-01-01 UTC) * 2^32 plus
-- a counter from the jobs' sequence, so each day is one range of ids, a
-- lookup by id touches one partition, and ids still grow with time (every
-- new id is above every id written before this migration). A batch's id is
-- its first job's, so batches partition the same way. Retention drops a
-- day's partition once everything in it has finished; the service makes
-- the partitions of the days ahead, and a default partition takes the ids
-- of a day that has none. Rows written before this migration (ids below
-- 2^32, the ids of 1970-01-01) stay in one partition, jobs_legacy
-- (batches_legacy), dropped as a whole once they have all aged out.
--
-- Webhook deliveries stay one table: an event id is unique for all time
-- (a completion retried with an event already written fails as a whole),
-- and a partitioned table can hold only keys that include its partition
-- key.
-- {schema} is replaced by the quoted schema name.

-- The id of a job enqueued now.
CREATE FUNCTION {schema}.next_job_id() RETURNS bigint
LANGUAGE sql VOLATILE AS $$
    SELECT ((floor(extract(epoch FROM now()))::bigint / 86400) << 32)
         | (nextval('{schema}.jobs_id_seq') & 4294967295)
$$;

CREATE FUNCTION {schema}.partition_by_id_day(tbl text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    parent  text := '{schema}.' || quote_ident(tbl);
    old     text := '{schema}.' || quote_ident(tbl || '_unpartitioned');
    pk      text;
    defs    text[];
    def     text;
    today   bigint := floor(extract(epoch FROM now()))::bigint / 86400;
    d       bigint;
    too_high boolean;
    has_rows boolean;
BEGIN
    SELECT pg_get_constraintdef(oid) INTO pk
    FROM pg_constraint WHERE conrelid = parent::regclass AND contype = 'p';
    SELECT coalesce(array_agg(pg_get_indexdef(indexrelid)), '{}') INTO defs
    FROM pg_index WHERE indrelid = parent::regclass AND NOT indisprimary;
    EXECUTE format('ALTER TABLE %s RENAME TO %I', parent, tbl || '_unpartitioned');
    EXECUTE format('CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (id)', parent, old);
    EXECUTE format('CREATE TABLE {schema}.%I PARTITION OF %s DEFAULT', tbl || '_default', parent);
    EXECUTE format('SELECT max(id) >= 4294967296 FROM %s', old) INTO too_high;
    IF too_high THEN
        RAISE EXCEPTION '% holds ids of 2^32 and above: they cannot be told from ids that carry a day', parent;
    END IF;
    -- A table that holds rows keeps them in one partition; a new one
    -- needs none (every partition is one more for each query to plan).
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s)', old) INTO has_rows;
    IF has_rows THEN
        EXECUTE format('CREATE TABLE {schema}.%I PARTITION OF %s FOR VALUES FROM (MINVALUE) TO (4294967296)',
            tbl || '_legacy', parent);
    END IF;
    d := today - 1;
    WHILE d <= today + 2 LOOP
        EXECUTE format('CREATE TABLE {schema}.%I PARTITION OF %s FOR VALUES FROM (%s) TO (%s)',
            tbl || '_p' || to_char(to_timestamp(d * 86400) AT TIME ZONE 'UTC', 'YYYYMMDD'), parent,
            d << 32, (d + 1) << 32);
        d := d + 1;
    END LOOP;
    EXECUTE format('INSERT INTO %s SELECT * FROM %s', parent, old);
    IF tbl = 'jobs' THEN
        EXECUTE format('ALTER SEQUENCE %s OWNED BY %s.id', pg_get_serial_sequence(old, 'id'), parent);
        EXECUTE format('ALTER TABLE %s ALTER COLUMN id SET DEFAULT {schema}.next_job_id()', parent);
    END IF;
    EXECUTE format('DROP TABLE %s', old);
    EXECUTE format('ALTER TABLE %s ADD %s', parent, pk);
    FOREACH def IN ARRAY defs LOOP
        EXECUTE def;
    END LOOP;
END
$$;

SELECT {schema}.partition_by_id_day('jobs');
SELECT {schema}.partition_by_id_day('batches');
DROP FUNCTION {schema}.partition_by_id_day(text);

-- The trigger that wakes idle workers went with the old jobs table.
CREATE TRIGGER jobs_notify
    AFTER INSERT ON {schema}.jobs
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.jobs_notify();
