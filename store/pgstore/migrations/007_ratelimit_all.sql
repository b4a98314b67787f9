-- Rate-limit buckets are not worth a WAL write and a disk flush per
-- request: after a crash they start full, as they would after an idle
-- hour. An unlogged table keeps the commit of a decision off the disk.
ALTER TABLE {schema}.rate_limits SET UNLOGGED;

-- rate_limit_allow_all decides several buckets in one call, all or none:
-- a request under a key's limit and its account's costs one round trip,
-- and a request refused by one bucket takes no token from the others.
-- Rows are locked in key order, so concurrent calls cannot deadlock. One
-- row per bucket of p_keys, in order; a bucket that would allow reports
-- allowed even when another refused, with its tokens untouched.
CREATE FUNCTION {schema}.rate_limit_allow_all(p_keys text[], p_intervals_us bigint[], p_bursts int[])
RETURNS TABLE (allowed boolean, remaining int, retry_after_us bigint, reset_us bigint)
LANGUAGE plpgsql AS $$
DECLARE
    now_ts    timestamptz := clock_timestamp();
    tats      timestamptz[] := array_fill(now_ts, ARRAY[cardinality(p_keys)]);
    everyone  boolean := true;
    i         int;
    cur       timestamptz;
    step      interval;
    tolerance interval;
    newtat    timestamptz;
BEGIN
    FOR i IN SELECT s.i FROM generate_subscripts(p_keys, 1) AS s(i) ORDER BY p_keys[s.i] LOOP
        INSERT INTO {schema}.rate_limits AS r (key, tat) VALUES (p_keys[i], now_ts)
        ON CONFLICT (key) DO UPDATE SET tat = r.tat
        RETURNING r.tat INTO cur;
        IF cur < now_ts THEN
            cur := now_ts;
        END IF;
        tats[i] := cur;
        IF cur + (p_intervals_us[i] - p_intervals_us[i] * p_bursts[i]) * interval '1 microsecond' > now_ts THEN
            everyone := false;
        END IF;
    END LOOP;
    FOR i IN 1 .. cardinality(p_keys) LOOP
        step := p_intervals_us[i] * interval '1 microsecond';
        tolerance := p_intervals_us[i] * p_bursts[i] * interval '1 microsecond';
        cur := tats[i];
        newtat := cur + step;
        IF newtat - tolerance > now_ts THEN
            allowed := false;
            remaining := 0;
            retry_after_us := ceil(extract(epoch FROM (newtat - tolerance - now_ts)) * 1000000);
            reset_us := ceil(extract(epoch FROM (cur - now_ts)) * 1000000);
        ELSIF everyone THEN
            UPDATE {schema}.rate_limits SET tat = newtat WHERE key = p_keys[i];
            allowed := true;
            remaining := floor(extract(epoch FROM (tolerance - (newtat - now_ts))) * 1000000 / p_intervals_us[i]);
            retry_after_us := 0;
            reset_us := ceil(extract(epoch FROM (newtat - now_ts)) * 1000000);
        ELSE
            allowed := true;
            remaining := floor(extract(epoch FROM (tolerance - (cur - now_ts))) * 1000000 / p_intervals_us[i]);
            retry_after_us := 0;
            reset_us := ceil(extract(epoch FROM (cur - now_ts)) * 1000000);
        END IF;
        RETURN NEXT;
    END LOOP;
    IF random() < 0.001 THEN
        DELETE FROM {schema}.rate_limits WHERE tat < now_ts - interval '1 hour';
    END IF;
END
$$;
