import Foundation
import LedgerPostgres

/// Reads of the log by what its facts say rather than by stream or position: the rare searches
/// of a subject-access export and of an erasure, and the backlog behind a checkpoint the gauges
/// show. The log is this module's, so its SQL is written here; the domain's words (event types,
/// data fields, stream prefixes) come from the caller as values, and the store learns no event's
/// shape.
extension EventStore {
    /// The events after `bound` (a row value `(tx_id, position)`): `events`, how many, and
    /// `seconds`, how long the oldest has waited (0 when none). A subquery for a caller that
    /// compares a checkpoint of its own with the log.
    package static func backlogSQL(after bound: String) -> String {
        """
        SELECT count(e.position) AS events, coalesce(extract(epoch FROM now() - min(e.recorded_at)), 0)::float8 AS seconds
          FROM ledger.events e WHERE (e.tx_id, e.position) > \(bound)
        """
    }

    /// The events of `types` whose data's `field` equals `value` (an expression of the caller's
    /// statement, such as a column of its `unnest`), columns `stream` and `data`: a relation to
    /// join laterally. Field and types are written into the statement, not bound: a partial
    /// index on them (schema 0017 for `appTransactionID`) serves only a predicate the planner
    /// can see.
    package static func eventsSQL(whose field: String, equals value: String, ofTypes types: [String]) -> String {
        """
        SELECT e.stream, e.data FROM ledger.events e
         WHERE (e.data ->> \(literal(field))) = \(value) AND e.event_type IN (\(types.map(literal).joined(separator: ", ")))
           AND e.data ? \(literal(field))
        """
    }

    /// For the events of `type` in streams starting with `prefix`, grouped by their data's `field`:
    /// how many (`seen`), and how many have, later in the log, an event of `laterTypes` in the
    /// stream `laterStream` names (an expression over the event `d`, such as its purchase's
    /// stream): `followed`. What a decision led to, counted without a table of its own.
    package static func followed(
        ofType type: String, inStreamsStartingWith prefix: String, groupedBy field: String, laterTypes: [String],
        laterStream: String
    ) -> PipelinedStatement {
        PipelinedStatement(
            """
            SELECT d.data->>$2::text AS key, count(*) AS seen,
                   count(*) FILTER (WHERE EXISTS (
                       SELECT 1 FROM ledger.events r
                        WHERE r.stream = \(laterStream) AND r.position > d.position
                          AND r.event_type IN (\(laterTypes.map(literal).joined(separator: ", "))))) AS followed
              FROM ledger.events d WHERE d.event_type = \(literal(type)) AND starts_with(d.stream, $1)
             GROUP BY 1 ORDER BY 1
            """, [prefix, field])
    }

    /// How many events the log holds.
    package static func count(on connection: PostgresConnection) throws -> Int {
        try connection.query("SELECT count(*) AS n FROM ledger.events")[0]["n"].int()
    }

    /// `field` of every event of `type` whose data's `userID` is `userID`, in streams starting
    /// with `prefix`, in log order: columns `value` and `recorded_at`. A whole-log read, fast
    /// for the types indexed by user (schema 0023: appAccountToken links).
    package static func field(
        _ field: String, ofEventsOfType type: String, forUser userID: String, inStreamsStartingWith prefix: String
    ) -> PipelinedStatement {
        PipelinedStatement(
            """
            SELECT data->>$3::text AS value, recorded_at FROM ledger.events
             WHERE event_type = \(literal(type)) AND data->>'userID' = $1 AND starts_with(stream, $2)
             ORDER BY position
            """, [userID, prefix, field])
    }

    /// Whether the log knows `userID` in the app `bundleID`: `stream` exists, or a fact of the
    /// app's streams (`kind:<bundle>:…`) has the id as the value of one of `fields` — not merely
    /// a value equal to the id somewhere.
    package static func knows(
        stream: String, orUser userID: String, namedBy fields: [String], inApp bundleID: String, on connection: PostgresConnection
    ) throws -> Bool {
        try connection.query(
            """
            SELECT EXISTS (SELECT 1 FROM ledger.streams WHERE stream = $2)
                OR EXISTS (SELECT 1 FROM ledger.events
                            WHERE split_part(stream, ':', 2) = $1 AND strpos(data::text, to_jsonb($3::text)::text) > 0
                              AND $3 = ANY (ARRAY(SELECT data->>f FROM unnest($4::text[]) AS f))) AS known
            """, [bundleID, stream, userID, PostgresTextArray(fields)])[0]["known"].bool()
    }

    /// The streams starting with `prefix` whose facts mention `value` (as a JSON string anywhere
    /// in their data).
    package static func streams(startingWith prefix: String, mentioning value: String, on connection: PostgresConnection) throws -> [String]
    {
        try connection.query(
            """
            SELECT DISTINCT stream FROM ledger.events
             WHERE starts_with(stream, $1) AND strpos(data::text, to_jsonb($2::text)::text) > 0
            """, [prefix, value]
        ).map { try $0["stream"].string() }
    }

    /// The values that stand for `holder` by links: those whose latest link (an event of
    /// `linkType` in a stream starting with `linkPrefix`, the value in `field`, its holder in
    /// `userID`) `holder` holds, and those in `field` of the events of `carriers` unless another
    /// holds their link now. Lower-cased, as stream names spell them.
    package static func linkedValues(
        _ field: String, ofType linkType: String, inStreamsStartingWith linkPrefix: String, heldBy holder: String,
        carriedBy carriers: [String],
        on connection: PostgresConnection
    ) throws -> [String] {
        try connection.query(
            """
            WITH links AS (
                SELECT DISTINCT ON (stream) lower(data->>$4::text) AS token, data->>'userID' AS holder
                  FROM ledger.events
                 WHERE event_type = \(literal(linkType)) AND starts_with(stream, $1)
                 ORDER BY stream, version DESC
            ),
            carried AS (
                SELECT DISTINCT lower(data->>$4::text) AS token FROM ledger.events
                 WHERE stream = ANY ($3::text[]) AND data ? $4::text
            )
            SELECT token FROM links WHERE holder = $2
            UNION
            SELECT c.token FROM carried c WHERE NOT EXISTS (SELECT 1 FROM links l WHERE l.token = c.token AND l.holder <> $2)
            """, [linkPrefix, holder, PostgresTextArray(carriers), field]
        ).map { try $0["token"].string() }
    }

    /// The evidence cited (`metadata.evidence`) by the app's facts that mention one of `quoted`
    /// (JSON strings, through `ledger.erasure_mentions`) or that are in one of `streams`.
    package static func evidenceCited(
        inApp bundleID: String, byFactsMentioning quoted: [String], orIn streams: [String], on connection: PostgresConnection
    ) throws -> [String] {
        try connection.query(
            """
            SELECT DISTINCT metadata->>'evidence' AS digest FROM ledger.events
             WHERE split_part(stream, ':', 2) = $1 AND metadata ? 'evidence'
               AND (ledger.erasure_mentions(data::text, $2::text[]) OR stream = ANY ($3::text[]))
            """, [bundleID, PostgresTextArray(quoted), PostgresTextArray(streams)]
        ).compactMap { $0["digest"].optionalString() }
    }

    /// An event type written into the statement, not bound: the indexes by user are partial on
    /// the type (schema 0023), and a prepared statement's generic plan cannot use them for a
    /// bound one.
    private static func literal(_ type: String) -> String {
        "'" + type.replacingOccurrences(of: "'", with: "''") + "'"
    }
}
