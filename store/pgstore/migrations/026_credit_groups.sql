-- credit_apply_group applies several changes of one account in order, in
-- one statement, under the account's balance row lock: each change is
-- judged as a change alone would be after the ones before it. It returns
-- one row per change that was not written (a key used before: 'replay'
-- with that entry; a charge the balance does not cover: 'insufficient'
-- with the balance then), then the entries written ('written'), in the
-- order of the changes, with one insert of them all (so that the totals'
-- trigger runs once) and one change of the balance. The caller gives each
-- key once.
-- {schema} is replaced by the quoted schema name.
CREATE FUNCTION {schema}.credit_apply_group(
    p_account text, p_deltas bigint[], p_reasons text[], p_refs text[], p_keys text[]
) RETURNS TABLE (ord integer, outcome text, entry_id bigint, created timestamptz,
                 delta bigint, reason text, reference text, balance bigint)
LANGUAGE plpgsql AS $$
DECLARE
    bal     bigint;
    had_row boolean;
    total   bigint := 0;
    take    boolean[] := '{}';
    e       record;
BEGIN
    SELECT b.balance INTO bal FROM {schema}.credit_balances b WHERE b.account = p_account FOR UPDATE;
    had_row := FOUND;
    bal := coalesce(bal, 0);
    FOR i IN 1 .. coalesce(cardinality(p_deltas), 0) LOOP
        take[i] := false;
        IF p_keys[i] IS NOT NULL THEN
            SELECT x.id, x.created_at, x.delta, x.reason, x.reference INTO e
            FROM {schema}.credit_entries x
            WHERE x.account = p_account AND x.idempotency_key = p_keys[i];
            IF FOUND THEN
                RETURN QUERY SELECT i, 'replay'::text, e.id, e.created_at, e.delta, e.reason, e.reference, bal;
                CONTINUE;
            END IF;
        END IF;
        IF p_deltas[i] < 0 AND bal < -p_deltas[i] THEN
            RETURN QUERY SELECT i, 'insufficient'::text, NULL::bigint, NULL::timestamptz, p_deltas[i], p_reasons[i], p_refs[i], bal;
            CONTINUE;
        END IF;
        bal := bal + p_deltas[i];
        total := total + p_deltas[i];
        take[i] := true;
    END LOOP;
    RETURN QUERY
    WITH ins AS (
        INSERT INTO {schema}.credit_entries AS x (account, delta, reason, reference, idempotency_key)
        SELECT p_account, p_deltas[k], p_reasons[k], p_refs[k], p_keys[k]
        FROM generate_subscripts(p_deltas, 1) AS k
        WHERE take[k]
        ORDER BY k
        RETURNING x.id, x.created_at, x.delta, x.reason, x.reference
    )
    SELECT NULL::integer, 'written'::text, ins.id, ins.created_at, ins.delta, ins.reason, ins.reference, NULL::bigint
    FROM ins ORDER BY ins.id;
    IF had_row THEN
        UPDATE {schema}.credit_balances SET balance = credit_balances.balance + total WHERE account = p_account;
    ELSIF true = ANY (take) THEN
        -- No row to lock: the changes were judged against their own
        -- grants, so the total is not negative.
        INSERT INTO {schema}.credit_balances AS b (account, balance) VALUES (p_account, total)
        ON CONFLICT (account) DO UPDATE SET balance = b.balance + EXCLUDED.balance;
    END IF;
END
$$;
