-- 0008: one implementation of versions and the hash chain.
--
-- Three append paths each gave new events their versions, previous hashes and hashes, and moved
-- the stream's head: ledger.append_events (0001), ledger.append_streams (0006) and the one-event
-- statement in LedgerEventStore/AppendStatements.swift. A change to the chain rule had to be
-- made three times and kept equal to EventHash.swift by hand. They now all call
-- ledger.write_chain; what differs between them is only how they find and hold the head.
-- The first two were defined in 0001 and 0006 until this file became their only text; databases
-- that applied this file before then keep it as applied:
-- replaces checksum 23d4f43fc2e9b943017982733e49b10d2f5afc891806f833b0961864fd8ef9e1

-- Appends events to streams after their heads as the caller read them, locked or not, and moves
-- the heads: stream i gets p_events->(i-1) after (p_versions[i], p_hashes[i]). The caller decides
-- whether it may: a racing writer that read the same head fails on events_stream_version_key
-- (23505), never writes a fork. One INSERT for every stream's events and one for the heads, so a
-- group of many streams costs no more statements than one stream.
-- p_events: [[{"id", "type", "data": "<json text>", "metadata": "<json text>", "occurred_at"}…]…].
CREATE FUNCTION ledger.write_chain(p_streams text[], p_versions bigint[], p_hashes bytea[], p_events jsonb, p_now timestamptz)
RETURNS TABLE (stream text, event_id uuid, version bigint, tx_id xid8, event_position bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_version   bigint;
    v_hash      bytea;
    v_streams   text[] := ARRAY[]::text[];
    v_ids       uuid[] := ARRAY[]::uuid[];
    v_versions  bigint[] := ARRAY[]::bigint[];
    v_types     text[] := ARRAY[]::text[];
    v_data      jsonb[] := ARRAY[]::jsonb[];
    v_meta      jsonb[] := ARRAY[]::jsonb[];
    v_occurred  timestamptz[] := ARRAY[]::timestamptz[];
    v_prev      bytea[] := ARRAY[]::bytea[];
    v_hashes    bytea[] := ARRAY[]::bytea[];
    v_head_versions bigint[] := ARRAY[]::bigint[];
    v_head_hashes   bytea[] := ARRAY[]::bytea[];
    v_event     jsonb;
BEGIN
    FOR i IN 1 .. cardinality(p_streams) LOOP
        v_version := p_versions[i];
        v_hash := p_hashes[i];
        FOR v_event IN SELECT value FROM jsonb_array_elements(p_events->(i - 1)) LOOP
            v_version := v_version + 1;
            v_streams := v_streams || p_streams[i];
            v_ids := v_ids || (v_event->>'id')::uuid;
            v_versions := v_versions || v_version;
            v_types := v_types || (v_event->>'type');
            v_data := v_data || (v_event->>'data')::jsonb;
            v_meta := v_meta || COALESCE((v_event->>'metadata')::jsonb, '{}'::jsonb);
            v_occurred := v_occurred || COALESCE((v_event->>'occurred_at')::timestamptz, p_now);
            v_prev := v_prev || v_hash;
            v_hash := ledger.event_hash(v_hash, p_streams[i], v_version, v_ids[cardinality(v_ids)],
                                        v_types[cardinality(v_types)], v_data[cardinality(v_data)],
                                        v_meta[cardinality(v_meta)], v_occurred[cardinality(v_occurred)], p_now);
            v_hashes := v_hashes || v_hash;
        END LOOP;
        v_head_versions := v_head_versions || v_version;
        v_head_hashes := v_head_hashes || v_hash;
    END LOOP;

    RETURN QUERY
        INSERT INTO ledger.events AS e
               (stream, version, event_id, event_type, data, metadata, occurred_at, recorded_at, prev_hash, hash)
        SELECT u.stream, u.version, u.id, u.type, u.data, u.meta, u.occurred, p_now, u.prev, u.hash
          FROM unnest(v_streams, v_ids, v_versions, v_types, v_data, v_meta, v_occurred, v_prev, v_hashes)
               AS u(stream, id, version, type, data, meta, occurred, prev, hash)
        RETURNING e.stream, e.event_id, e.version, e.tx_id, e.position;

    INSERT INTO ledger.streams AS s (stream, version, last_hash)
        SELECT h.stream, h.version, h.hash FROM unnest(p_streams, v_head_versions, v_head_hashes) AS h(stream, version, hash)
        ON CONFLICT (stream) DO UPDATE SET version = EXCLUDED.version, last_hash = EXCLUDED.last_hash;
END
$$;

-- Appends several events to one stream in one call (one round trip). A single event takes the
-- leaner statement in LedgerEventStore/AppendStatements.swift; both keep the same invariants.
--
-- p_expected: NULL = any version; 0 = the stream must not exist yet; n = its version must be n.
-- p_events:   [{"id": uuid, "type": text, "data": "<json text>", "metadata": "<json text>", "occurred_at": ts}, ...]
--             data and metadata travel as JSON *strings*, so no payload can alter the array's shape.
--
-- Idempotency comes first (under the stream lock, so a racing duplicate on the same stream is
-- seen): if every id already exists with the same stream, type, data and metadata, the original
-- rows are returned with duplicate = true and nothing is written. Any other overlap raises LE002.
-- A version mismatch raises LE001 with the actual version in DETAIL.
CREATE OR REPLACE FUNCTION ledger.append_events(p_stream text, p_expected bigint, p_events jsonb)
RETURNS TABLE (event_id uuid, version bigint, tx_id xid8, event_position bigint, duplicate boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_current   bigint;
    v_hash      bytea;
    v_count     integer := jsonb_array_length(p_events);
    v_existing  integer;
    v_matching  integer;
    v_ids       uuid[];
BEGIN
    IF v_count = 0 THEN
        RAISE EXCEPTION 'an append needs at least one event' USING ERRCODE = '22023';
    END IF;

    SELECT s.version, s.last_hash INTO v_current, v_hash
      FROM ledger.streams s WHERE s.stream = p_stream FOR UPDATE;
    IF NOT FOUND THEN
        INSERT INTO ledger.streams (stream, version, last_hash)
             VALUES (p_stream, 0, '\x0000000000000000000000000000000000000000000000000000000000000000')
        ON CONFLICT DO NOTHING;
        SELECT s.version, s.last_hash INTO v_current, v_hash
          FROM ledger.streams s WHERE s.stream = p_stream FOR UPDATE;
    END IF;

    -- Idempotency, checked after the lock so a duplicate committed meanwhile is visible. The ids
    -- go in as an array so the probe is an index scan on events_event_id_key, never a join the
    -- planner could turn into a scan of the whole table.
    SELECT array_agg((x.value->>'id')::uuid ORDER BY x.ordinality) INTO v_ids
      FROM jsonb_array_elements(p_events) WITH ORDINALITY AS x;
    SELECT count(*) INTO v_existing FROM ledger.events e WHERE e.event_id = ANY (v_ids);
    IF v_existing > 0 THEN
        SELECT count(*) INTO v_matching
          FROM jsonb_array_elements(p_events) AS x
          JOIN LATERAL (SELECT * FROM ledger.events e WHERE e.event_id = (x.value->>'id')::uuid) e ON true
         WHERE e.stream = p_stream AND e.event_type = x.value->>'type'
           AND e.data = (x.value->>'data')::jsonb
           AND e.metadata = COALESCE((x.value->>'metadata')::jsonb, '{}'::jsonb);
        IF v_existing = v_count AND v_matching = v_count THEN
            RETURN QUERY
                SELECT e.event_id, e.version, e.tx_id, e.position, true
                  FROM ledger.events e WHERE e.event_id = ANY (v_ids)
                 ORDER BY e.version;
            RETURN;
        END IF;
        RAISE EXCEPTION 'event id already used with other content or in another stream'
            USING ERRCODE = 'LE002',
                  DETAIL = (SELECT string_agg(e.event_id::text, ',') FROM ledger.events e WHERE e.event_id = ANY (v_ids));
    END IF;

    IF p_expected IS NOT NULL AND p_expected <> v_current THEN
        RAISE EXCEPTION 'wrong expected version for stream'
            USING ERRCODE = 'LE001', DETAIL = v_current::text;
    END IF;

    RETURN QUERY
        SELECT w.event_id, w.version, w.tx_id, w.event_position, false
          FROM ledger.write_chain(ARRAY[p_stream], ARRAY[v_current], ARRAY[v_hash], jsonb_build_array(p_events), now()) AS w;
END
$$;

-- Appends to several streams in one call: the group commit of concurrent ingestions.
--
-- One request's append costs little inside PostgreSQL; its statement, round trip and commit cost
-- the most (measured: ledger.append_events at 0.34 ms a call on an idle server, three times that
-- under load, most of it per call rather than per event). Concurrent requests are therefore
-- recorded together: one call appends every stream of the group, one commit makes them durable.
--
-- p_appends: [{"stream": "…", "expected": n, "events": [{"id", "type", "data", "metadata",
-- "occurred_at"}…]}…], each stream at most once, each with the exact version its events were
-- decided on (0: the stream must not exist yet). All or nothing: a version that moved raises
-- LE001 (DETAIL: the stream), an event id that exists raises LE002; the caller then appends the
-- group's requests one by one, each deciding again on what it reads (FactRecorder).
-- Heads are locked in stream-name order (as every multi-stream append locks them, so two never
-- deadlock).
CREATE OR REPLACE FUNCTION ledger.append_streams(p_appends jsonb)
RETURNS TABLE (stream text, event_id uuid, version bigint, tx_id xid8, event_position bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_names     text[];
    v_append    jsonb;
    v_stream    text;
    v_current   bigint;
    v_hash      bytea;
    v_streams   text[] := ARRAY[]::text[];
    v_versions  bigint[] := ARRAY[]::bigint[];
    v_hashes    bytea[] := ARRAY[]::bytea[];
    v_events    jsonb := '[]'::jsonb;
BEGIN
    SELECT array_agg(a->>'stream' ORDER BY a->>'stream') INTO v_names FROM jsonb_array_elements(p_appends) AS a;
    IF v_names IS NULL THEN
        RAISE EXCEPTION 'an append needs at least one stream' USING ERRCODE = '22023';
    END IF;
    -- Heads for new streams, then every head locked, in name order.
    INSERT INTO ledger.streams AS s (stream, version, last_hash)
        SELECT n, 0, '\x0000000000000000000000000000000000000000000000000000000000000000' FROM unnest(v_names) AS n ORDER BY n
        ON CONFLICT DO NOTHING;
    PERFORM 1 FROM ledger.streams s WHERE s.stream = ANY (v_names) ORDER BY s.stream FOR UPDATE;

    IF EXISTS (SELECT 1 FROM ledger.events e
                WHERE e.event_id = ANY (ARRAY(SELECT (x.value->>'id')::uuid
                                                FROM jsonb_array_elements(p_appends) AS a, jsonb_array_elements(a->'events') AS x))) THEN
        RAISE EXCEPTION 'an event id of this group is already used' USING ERRCODE = 'LE002';
    END IF;

    FOR v_append IN SELECT value FROM jsonb_array_elements(p_appends) LOOP
        v_stream := v_append->>'stream';
        SELECT s.version, s.last_hash INTO v_current, v_hash FROM ledger.streams s WHERE s.stream = v_stream;
        IF v_current <> (v_append->>'expected')::bigint THEN
            RAISE EXCEPTION 'wrong expected version for stream' USING ERRCODE = 'LE001', DETAIL = v_stream;
        END IF;
        v_streams := v_streams || v_stream;
        v_versions := v_versions || v_current;
        v_hashes := v_hashes || v_hash;
        v_events := v_events || jsonb_build_array(v_append->'events');
    END LOOP;
    RETURN QUERY SELECT * FROM ledger.write_chain(v_streams, v_versions, v_hashes, v_events, now());
END
$$;

GRANT EXECUTE ON FUNCTION ledger.append_events(text, bigint, jsonb) TO ledger_app;
GRANT EXECUTE ON FUNCTION ledger.append_streams(jsonb) TO ledger_app;
GRANT EXECUTE ON FUNCTION ledger.write_chain(text[], bigint[], bytea[], jsonb, timestamptz) TO ledger_app;
