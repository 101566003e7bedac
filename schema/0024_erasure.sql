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

-- Whether `p_text` holds any of `p_needles` (plain substrings).
CREATE FUNCTION ledger.erasure_mentions(p_text text, p_needles text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT EXISTS (SELECT 1 FROM unnest(p_needles) AS n WHERE strpos(p_text, n) > 0)
$$;

-- `p_text` with every `p_old[i]` replaced by `p_new[i]`.
CREATE FUNCTION ledger.erasure_replace(p_text text, p_old text[], p_new text[]) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    v_text text := p_text;
BEGIN
    FOR i IN 1 .. coalesce(cardinality(p_old), 0) LOOP
        v_text := replace(v_text, p_old[i], p_new[i]);
    END LOOP;
    RETURN v_text;
END
$$;

-- Erases, for the app `p_bundle`, the identifiers `p_old` (a user id, then the tokens in every
-- spelling the log uses), each replaced by `p_new` at the same index:
--   * every event of the app whose data or metadata holds one as a JSON string, and the streams
--     named by one (`user:<bundle>:<id>`, `token:<bundle>:<token>`) are rewritten — those streams'
--     events get new ids, as ids derive from stream names — and every stream so touched is
--     re-chained from its first event (versions, positions, times kept);
--   * every other table of the schema: a `user_id` equal to one, a JSON string equal to one in a
--     jsonb column or in a text column holding JSON (`body`, `timeline`), an admin action's target;
--   * the evidence `p_shred` names loses its body.
-- Appends wait meanwhile (the stream heads are locked), so none chains onto a head that moves.
-- Every server's cache of timelines is told to forget everything at the commit.
-- Answers what it did; `rechained` lists each stream's head before and after, so whoever kept an
-- old head can follow it to the new one.
CREATE FUNCTION ledger.erase(p_bundle text, p_old text[], p_new text[], p_shred text[])
RETURNS TABLE (events_rewritten bigint, rows_rewritten bigint, evidence_shredded bigint, rechained jsonb)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_quoted_old text[];
    v_quoted_new text[];
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
    IF cardinality(p_old) IS DISTINCT FROM cardinality(p_new) OR cardinality(p_old) = 0 THEN
        RAISE EXCEPTION 'ledger.erase needs as many replacements as identifiers' USING ERRCODE = '22023';
    END IF;
    -- As JSON strings (the log's data is JSON: an id is replaced where it is a whole string), and
    -- as the names of the streams they may name.
    SELECT array_agg(to_jsonb(x.o)::text ORDER BY x.i), array_agg(to_jsonb(x.n)::text ORDER BY x.i)
      INTO v_quoted_old, v_quoted_new FROM unnest(p_old, p_new) WITH ORDINALITY AS x(o, n, i);
    SELECT array_agg(k.kind || ':' || p_bundle || ':' || x.o), array_agg(k.kind || ':' || p_bundle || ':' || x.n)
      INTO v_old_streams, v_new_streams
      FROM unnest(p_old, p_new) AS x(o, n) CROSS JOIN (VALUES ('user'), ('token')) AS k(kind);

    PERFORM set_config('ledger.erasing', 'on', true);
    LOCK TABLE ledger.streams IN EXCLUSIVE MODE;

    -- The log.
    WITH rewritten AS (
        UPDATE ledger.events e
           SET stream = coalesce(v_new_streams[array_position(v_old_streams, e.stream)], e.stream),
               -- Ids derive from the stream's name: the id, used again later, must start afresh.
               event_id = CASE WHEN e.stream = ANY (v_old_streams) THEN gen_random_uuid() ELSE e.event_id END,
               data = ledger.erasure_replace(e.data::text, v_quoted_old, v_quoted_new)::jsonb,
               metadata = ledger.erasure_replace(e.metadata::text, v_quoted_old, v_quoted_new)::jsonb
         WHERE split_part(e.stream, ':', 2) = p_bundle
           AND (e.stream = ANY (v_old_streams)
                OR ledger.erasure_mentions(e.data::text, v_quoted_old) OR ledger.erasure_mentions(e.metadata::text, v_quoted_old))
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

    -- Everything derived or kept beside the log: ids by column name, JSON by content.
    FOR t IN
        SELECT c.table_name, bool_or(c.column_name = 'bundle_id') AS per_app
          FROM information_schema.columns c JOIN information_schema.tables tb USING (table_schema, table_name)
         WHERE c.table_schema = 'ledger' AND tb.table_type = 'BASE TABLE' AND c.table_name NOT IN ('events', 'streams', 'evidence')
         GROUP BY c.table_name HAVING bool_or(c.column_name = 'user_id')
    LOOP
        EXECUTE format('UPDATE ledger.%I t SET user_id = x.n FROM unnest($2::text[], $3::text[]) AS x(o, n) WHERE t.user_id = x.o %s',
                       t.table_name, CASE WHEN t.per_app THEN 'AND t.bundle_id = $1' ELSE '' END)
            USING p_bundle, p_old, p_new;
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
        -- Text is read as JSON first: a writer's escaping (of "/", say) may differ from jsonb's.
        EXECUTE format(
            'UPDATE ledger.%1$I SET %2$I = ledger.erasure_replace(%2$I::jsonb::text, $2, $3)::%3$s '
            'WHERE ledger.erasure_mentions(%2$I::text, $4) AND ledger.erasure_mentions(%2$I::jsonb::text, $2) %4$s',
            t.table_name, t.column_name, t.data_type, CASE WHEN t.per_app THEN 'AND bundle_id = $1' ELSE '' END)
            USING p_bundle, v_quoted_old, v_quoted_new, p_old;
        GET DIAGNOSTICS v_count = ROW_COUNT;
        v_rows := v_rows + v_count;
    END LOOP;
    -- An admin action's target names the user as a path: <bundle>/users/<id>[/…].
    UPDATE ledger.audit_log a SET target = p_bundle || '/users/' || x.n || substr(a.target, length(p_bundle || '/users/' || x.o) + 1)
      FROM unnest(p_old, p_new) AS x(o, n)
     WHERE a.target = p_bundle || '/users/' || x.o OR starts_with(a.target, p_bundle || '/users/' || x.o || '/');
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
REVOKE ALL ON FUNCTION ledger.erase(text, text[], text[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.erase(text, text[], text[], text[]) TO ledger_app;
