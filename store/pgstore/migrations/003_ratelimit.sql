-- Rate limits shared by every process on the database: one row per
-- bucket holding its theoretical arrival time (GCRA), decided by one call
-- of rate_limit_allow, so a request costs one round trip.
CREATE TABLE {schema}.rate_limits (
    key text PRIMARY KEY,
    tat timestamptz NOT NULL
);

-- rate_limit_allow takes a token from the bucket p_key, refilled one token
-- every p_interval_us microseconds up to p_burst, by the database's clock.
-- The row lock serializes concurrent decisions on one bucket only.
CREATE FUNCTION {schema}.rate_limit_allow(p_key text, p_interval_us bigint, p_burst int,
    OUT allowed boolean, OUT remaining int, OUT retry_after_us bigint, OUT reset_us bigint)
LANGUAGE plpgsql AS $$
DECLARE
    now_ts    timestamptz := clock_timestamp();
    step      interval := p_interval_us * interval '1 microsecond';
    tolerance interval := p_interval_us * p_burst * interval '1 microsecond';
    cur       timestamptz;
    newtat    timestamptz;
BEGIN
    INSERT INTO {schema}.rate_limits AS r (key, tat) VALUES (p_key, now_ts)
    ON CONFLICT (key) DO UPDATE SET tat = r.tat
    RETURNING r.tat INTO cur;
    IF cur < now_ts THEN
        cur := now_ts;
    END IF;
    newtat := cur + step;
    IF newtat - tolerance > now_ts THEN
        allowed := false;
        remaining := 0;
        retry_after_us := ceil(extract(epoch FROM (newtat - tolerance - now_ts)) * 1000000);
        reset_us := ceil(extract(epoch FROM (cur - now_ts)) * 1000000);
        RETURN;
    END IF;
    UPDATE {schema}.rate_limits SET tat = newtat WHERE key = p_key;
    allowed := true;
    remaining := floor(extract(epoch FROM (tolerance - (newtat - now_ts))) * 1000000 / p_interval_us);
    retry_after_us := 0;
    reset_us := ceil(extract(epoch FROM (newtat - now_ts)) * 1000000);
    -- Buckets full for an hour are forgotten, now and then.
    IF random() < 0.001 THEN
        DELETE FROM {schema}.rate_limits WHERE tat < now_ts - interval '1 hour';
    END IF;
END
$$;
