-- Fixed-window quotas shared by every process on the database (the free
-- bulk tool's addresses per account, failed sign-ins per email): one row
-- per key holding the count of its current window, numbered from the
-- epoch by the database's clock. A row from an earlier window counts as
-- empty. The quotas are logged: they stand for free work handed out, so a
-- crash must not renew them.
CREATE TABLE {schema}.quotas (
    key      text PRIMARY KEY,
    win      bigint NOT NULL,
    used     int NOT NULL,
    ends_at  timestamptz NOT NULL
);

CREATE INDEX quotas_ends_at ON {schema}.quotas (ends_at);

-- quota_take takes p_n units from p_key's current window of p_window_us
-- microseconds if p_limit - used leaves them, all or none, under the
-- row's lock; p_n = 0 only reads. One row out: whether the units were
-- taken, what is left, the microseconds until the window ends, and the
-- window's number, which a refund names.
CREATE FUNCTION {schema}.quota_take(p_key text, p_n int, p_limit int, p_window_us bigint,
    OUT allowed boolean, OUT remaining int, OUT reset_us bigint, OUT win_no bigint)
LANGUAGE plpgsql AS $$
DECLARE
    now_us  bigint := floor(extract(epoch FROM clock_timestamp()) * 1000000);
    ends_us bigint;
    cur     int;
BEGIN
    win_no := now_us / p_window_us;
    ends_us := (win_no + 1) * p_window_us;
    reset_us := ends_us - now_us;
    IF p_n = 0 OR p_n > p_limit THEN
        SELECT CASE WHEN q.win = win_no THEN q.used ELSE 0 END INTO cur
        FROM {schema}.quotas q WHERE q.key = p_key;
        remaining := greatest(p_limit - coalesce(cur, 0), 0);
        allowed := p_n = 0;
        RETURN;
    END IF;
    -- Create or lock the row; a row of an ended window starts again.
    INSERT INTO {schema}.quotas AS q (key, win, used, ends_at)
    VALUES (p_key, win_no, 0, to_timestamp(ends_us / 1000000.0))
    ON CONFLICT (key) DO UPDATE SET
        win = EXCLUDED.win,
        used = CASE WHEN q.win = EXCLUDED.win THEN q.used ELSE 0 END,
        ends_at = EXCLUDED.ends_at
    RETURNING q.used INTO cur;
    IF cur + p_n > p_limit THEN
        allowed := false;
        remaining := greatest(p_limit - cur, 0);
        RETURN;
    END IF;
    UPDATE {schema}.quotas q SET used = cur + p_n WHERE q.key = p_key;
    allowed := true;
    remaining := p_limit - cur - p_n;
    -- Rows of windows ended an hour ago are forgotten, now and then.
    IF random() < 0.01 THEN
        DELETE FROM {schema}.quotas q WHERE q.ends_at < clock_timestamp() - interval '1 hour';
    END IF;
END
$$;
