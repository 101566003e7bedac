-- 0024: erasing a user's identifiers (a user id, the appAccountTokens that stand for them) while
-- the financial record stays: every place they are written has them replaced by pseudonyms in one
-- transaction, the streams that named them re-chained, and the raw evidence that carries a token
-- shredded (its digest and kind kept). docs/privacy.md says what is replaced and why.
--
-- The log is append-only for everyone, the owner included; the one exception is this function,
-- owned by the owner and run on its behalf (SECURITY DEFINER), which says so with a setting only
-- the owner's own statements honour.

ALTER TABLE ledger.evidence ADD COLUMN shredded_at timestamptz;
COMMENT ON COLUMN ledger.evidence.shredded_at IS
    'Set when an erasure emptied the body (it carried an erased user''s appAccountToken); digest and kind stay.';

-- True inside ledger.erase only: the setting is transaction-local, and it counts only when the
-- statement runs as the owner of the log (as ledger.erase does), which the application role never is.
CREATE FUNCTION ledger.erasing() RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT current_setting('ledger.erasing', true) = 'on'
       AND current_user = (SELECT pg_get_userbyid(c.relowner) FROM pg_class c WHERE c.oid = 'ledger.events'::regclass)
$$;

CREATE OR REPLACE FUNCTION ledger.refuse_rewrite() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'TRUNCATE' AND ledger.erasing() THEN RETURN NULL; END IF;
    RAISE EXCEPTION 'ledger.events is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'LE003';
END
$$;

CREATE OR REPLACE FUNCTION ledger.refuse_append_only_rewrite() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'TRUNCATE' AND ledger.erasing() THEN RETURN NULL; END IF;
    RAISE EXCEPTION '%.% is append-only: % is not allowed', TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'LE003';
END
$$;

-- Whether `p_text` holds any of `p_needles` (plain substrings): the cheap test before the walk.
CREATE FUNCTION ledger.erasure_mentions(p_text text, p_needles text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT EXISTS (SELECT 1 FROM unnest(p_needles) AS n WHERE strpos(p_text, n) > 0)
$$;

-- `p_value` with the user id `p_user` replaced by `p_pseudonym` where a key names a user, and
-- every string equal to a token `p_old[i]` replaced by `p_new[i]` wherever it is. Only the keys
-- that name users: a user id may well equal some other value (a product id, a number as text),
-- which must stay; a token is a UUID, equal to nothing else.
CREATE FUNCTION ledger.erasure_jsonb(p_value jsonb, p_key text, p_user text, p_pseudonym text, p_old text[], p_new text[])
RETURNS jsonb LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    v_result jsonb;
    v_index integer;
BEGIN
    CASE jsonb_typeof(p_value)
    WHEN 'string' THEN
        IF p_key = ANY (ARRAY['userID', 'fromUserID', 'toUserID', 'counterpartUserID', 'user_id', 'from', 'to'])
           AND p_value #>> '{}' = p_user THEN
            RETURN to_jsonb(p_pseudonym);
        END IF;
        v_index := array_position(p_old, p_value #>> '{}');
        RETURN CASE WHEN v_index IS NULL THEN p_value ELSE to_jsonb(p_new[v_index]) END;
    WHEN 'object' THEN
        SELECT coalesce(jsonb_object_agg(e.key, ledger.erasure_jsonb(e.value, e.key, p_user, p_pseudonym, p_old, p_new)), '{}'::jsonb)
          INTO v_result FROM jsonb_each(p_value) AS e;
        RETURN v_result;
    WHEN 'array' THEN
        SELECT coalesce(jsonb_agg(ledger.erasure_jsonb(e.value, p_key, p_user, p_pseudonym, p_old, p_new) ORDER BY e.n), '[]'::jsonb)
          INTO v_result FROM jsonb_array_elements(p_value) WITH ORDINALITY AS e(value, n);
        RETURN v_result;
    ELSE
        RETURN p_value;
    END CASE;
END
$$;

-- Erases, for the app `p_bundle`, the user id `p_user` — replaced by `p_pseudonym` where a key
-- names a user — and the tokens `p_old_tokens` (each in every spelling the log uses), each
-- replaced by `p_new_tokens` at the same index, wherever they are:
--   * the app's events that name one, and the streams named by one (`user:<bundle>:<id>`,
--     `token:<bundle>:<token>`), which are renamed; their events get new ids, as ids derive from
--     stream names; every stream so touched is re-chained from its first event (versions,
--     positions, times kept);
--   * every other table of the schema: a `user_id` column, the JSON of jsonb columns and of text
--     columns holding JSON (`body`, `timeline`), an admin action's target;
--   * the evidence `p_shred` names loses its body.
-- Only erasures: a pseudonym and UUIDs, nothing else, can be written (the application role may
-- call it; it can never rewrite a product, a price or a date). The streams it rewrites are held
-- as their writers hold them, then every append waits (the heads are locked), so none chains
-- onto a head that moves. Every server's cache of timelines is told to forget at the commit.
-- Answers what it did; `rechained` lists each stream's head before and after, so whoever kept an
-- old head can follow it to the new one.
CREATE FUNCTION ledger.erase(p_bundle text, p_user text, p_pseudonym text, p_old_tokens text[], p_new_tokens text[], p_shred text[])
RETURNS TABLE (events_rewritten bigint, rows_rewritten bigint, evidence_shredded bigint, rechained jsonb)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_uuid CONSTANT text := '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$';
    v_old_tokens text[] := coalesce(p_old_tokens, ARRAY[]::text[]);
    v_new_tokens text[] := coalesce(p_new_tokens, ARRAY[]::text[]);
    v_needles text[];
    v_old_streams text[];
    v_new_streams text[];
    v_streams text[];
    v_events bigint := 0;
    v_rows bigint := 0;
    v_count bigint;
    v_shredded bigint := 0;
    v_rechained jsonb := '[]'::jsonb;
    v_before bytea;
    v_prev bytea;
    v_hash bytea;
    v_stream text;
    r record;
    t record;
BEGIN
    IF p_pseudonym !~ '^erased:[0-9a-f]{32}$' OR coalesce(p_user, '') = ''
       OR cardinality(v_old_tokens) <> cardinality(v_new_tokens)
       OR EXISTS (SELECT 1 FROM unnest(v_old_tokens || v_new_tokens) AS x(token) WHERE x.token !~ v_uuid) THEN
        RAISE EXCEPTION 'ledger.erase replaces a user id by a pseudonym (erased: and 32 hex digits) and tokens by UUIDs, nothing else'
            USING ERRCODE = '22023';
    END IF;
    v_needles := p_user || v_old_tokens;
    v_old_streams := ('user:' || p_bundle || ':' || p_user) || ARRAY(SELECT 'token:' || p_bundle || ':' || o FROM unnest(v_old_tokens) AS o);
    v_new_streams := ('user:' || p_bundle || ':' || p_pseudonym) || ARRAY(SELECT 'token:' || p_bundle || ':' || n FROM unnest(v_new_tokens) AS n);

    -- The streams to rewrite, held as their writers hold them (a decision read before must not
    -- append after), then every head.
    PERFORM pg_advisory_xact_lock(keys.k) FROM (
        SELECT DISTINCT hashtextextended(e.stream, 0) AS k FROM ledger.events e
         WHERE split_part(e.stream, ':', 2) = p_bundle AND (e.stream = ANY (v_old_streams) OR ledger.erasure_mentions(e.data::text, v_needles))
         ORDER BY 1) AS keys;
    PERFORM set_config('ledger.erasing', 'on', true);
    LOCK TABLE ledger.streams IN EXCLUSIVE MODE;

    -- The log.
    WITH rewritten AS (
        UPDATE ledger.events e
           SET stream = coalesce(v_new_streams[array_position(v_old_streams, e.stream)], e.stream),
               event_id = CASE WHEN e.stream = ANY (v_old_streams) THEN gen_random_uuid() ELSE e.event_id END,
               data = ledger.erasure_jsonb(e.data, NULL, p_user, p_pseudonym, v_old_tokens, v_new_tokens),
               metadata = ledger.erasure_jsonb(e.metadata, NULL, p_user, p_pseudonym, v_old_tokens, v_new_tokens)
         WHERE split_part(e.stream, ':', 2) = p_bundle
           AND (e.stream = ANY (v_old_streams)
                OR (ledger.erasure_mentions(e.data::text || e.metadata::text, v_needles)
                    AND (ledger.erasure_jsonb(e.data, NULL, p_user, p_pseudonym, v_old_tokens, v_new_tokens) <> e.data
                         OR ledger.erasure_jsonb(e.metadata, NULL, p_user, p_pseudonym, v_old_tokens, v_new_tokens) <> e.metadata)))
        RETURNING e.stream)
    SELECT count(*), array_agg(DISTINCT rewritten.stream) INTO v_events, v_streams FROM rewritten;
    UPDATE ledger.streams s SET stream = v_new_streams[array_position(v_old_streams, s.stream)] WHERE s.stream = ANY (v_old_streams);

    FOREACH v_stream IN ARRAY coalesce(v_streams, ARRAY[]::text[]) LOOP
        SELECT s.last_hash INTO v_before FROM ledger.streams s WHERE s.stream = v_stream;
        v_prev := '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea;
        FOR r IN SELECT e.* FROM ledger.events e WHERE e.stream = v_stream ORDER BY e.version LOOP
            v_hash := ledger.event_hash(v_prev, r.stream, r.version, r.event_id, r.event_type, r.data, r.metadata, r.occurred_at, r.recorded_at);
            IF r.prev_hash <> v_prev OR r.hash <> v_hash THEN
                UPDATE ledger.events e SET prev_hash = v_prev, hash = v_hash WHERE e.position = r.position;
            END IF;
            v_prev := v_hash;
        END LOOP;
        UPDATE ledger.streams s SET last_hash = v_prev WHERE s.stream = v_stream;
        v_rechained := v_rechained || jsonb_build_object('stream', v_stream, 'before', encode(v_before, 'hex'), 'after', encode(v_prev, 'hex'));
    END LOOP;

    -- Everything derived or kept beside the log: users by column name, JSON by content.
    FOR t IN
        SELECT c.table_name, bool_or(c.column_name = 'bundle_id') AS per_app
          FROM information_schema.columns c JOIN information_schema.tables tb USING (table_schema, table_name)
         WHERE c.table_schema = 'ledger' AND tb.table_type = 'BASE TABLE' AND c.table_name NOT IN ('events', 'streams', 'evidence')
         GROUP BY c.table_name HAVING bool_or(c.column_name = 'user_id')
    LOOP
        EXECUTE format('UPDATE ledger.%I t SET user_id = $3 WHERE t.user_id = $2 %s', t.table_name, CASE WHEN t.per_app THEN 'AND t.bundle_id = $1' ELSE '' END)
            USING p_bundle, p_user, p_pseudonym;
        GET DIAGNOSTICS v_count = ROW_COUNT;
        v_rows := v_rows + v_count;
    END LOOP;
    FOR t IN
        SELECT c.table_name, c.column_name, c.data_type,
               EXISTS (SELECT 1 FROM information_schema.columns b
                        WHERE b.table_schema = 'ledger' AND b.table_name = c.table_name AND b.column_name = 'bundle_id') AS per_app
          FROM information_schema.columns c JOIN information_schema.tables tb USING (table_schema, table_name)
         WHERE c.table_schema = 'ledger' AND tb.table_type = 'BASE TABLE' AND c.table_name NOT IN ('events', 'streams', 'evidence')
           AND (c.data_type IN ('jsonb', 'json') OR (c.data_type = 'text' AND c.column_name IN ('body', 'timeline')))
    LOOP
        -- Text is read as JSON: its writer's escaping (of "/", say) may differ from jsonb's.
        EXECUTE format(
            'UPDATE ledger.%1$I SET %2$I = ledger.erasure_jsonb(%2$I::jsonb, NULL, $2, $3, $4, $5)::%3$s '
            'WHERE ledger.erasure_mentions(%2$I::text, $6) AND ledger.erasure_jsonb(%2$I::jsonb, NULL, $2, $3, $4, $5) <> %2$I::jsonb %4$s',
            t.table_name, t.column_name, t.data_type, CASE WHEN t.per_app THEN 'AND bundle_id = $1' ELSE '' END)
            USING p_bundle, p_user, p_pseudonym, v_old_tokens, v_new_tokens, v_needles;
        GET DIAGNOSTICS v_count = ROW_COUNT;
        v_rows := v_rows + v_count;
    END LOOP;
    -- An admin action's target names the user as a path: <bundle>/users/<id>[/…].
    UPDATE ledger.audit_log a SET target = p_bundle || '/users/' || p_pseudonym || substr(a.target, length(p_bundle || '/users/' || p_user) + 1)
     WHERE a.target = p_bundle || '/users/' || p_user OR starts_with(a.target, p_bundle || '/users/' || p_user || '/');
    GET DIAGNOSTICS v_count = ROW_COUNT;
    v_rows := v_rows + v_count;

    UPDATE ledger.evidence v SET body = ''::bytea, shredded_at = now()
     WHERE v.digest = ANY (coalesce(p_shred, ARRAY[]::text[])) AND v.bundle_id = p_bundle AND v.shredded_at IS NULL;
    GET DIAGNOSTICS v_shredded = ROW_COUNT;

    PERFORM pg_notify('ledger_projection', '*');
    PERFORM set_config('ledger.erasing', 'off', true);
    RETURN QUERY SELECT v_events, v_rows, v_shredded, v_rechained;
END
$$;
REVOKE ALL ON FUNCTION ledger.erase(text, text, text, text[], text[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.erase(text, text, text, text[], text[], text[]) TO ledger_app;
