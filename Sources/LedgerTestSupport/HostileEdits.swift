/// What a database superuser who wants an edit to go unseen does after it: recompute the
/// stream's hash chain and head, so `ledger verify` passes. Tests run it as the cluster's
/// superuser (the append-only triggers off, `session_replication_role = replica`), to show what
/// only the proof tree's digests catch.
package enum HostileEdits {
    /// A `DO` block re-chaining `stream` from its first event (the name is the test's own).
    package static func rechainSQL(_ stream: String) -> String {
        """
        DO $$ DECLARE r record; v_prev bytea := '\\x0000000000000000000000000000000000000000000000000000000000000000'; v_hash bytea;
        BEGIN
          FOR r IN SELECT * FROM ledger.events WHERE stream = '\(stream)' ORDER BY version LOOP
            v_hash := ledger.event_hash(v_prev, r.stream, r.version, r.event_id, r.event_type, r.data, r.metadata, r.occurred_at, r.recorded_at);
            UPDATE ledger.events SET prev_hash = v_prev, hash = v_hash WHERE position = r.position;
            v_prev := v_hash;
          END LOOP;
          UPDATE ledger.streams SET last_hash = v_prev WHERE stream = '\(stream)';
        END $$
        """
    }
}
