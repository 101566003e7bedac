/// The statements of one pipelined round trip, written by several authors: each keeps the handle
/// `add` or `include` gave it and reads its own results by that handle, never by counting what
/// the others sent before it. A transaction that several modules write into (the group commit:
/// its evidence, its appends, its projection) stays correct when one of them sends a statement
/// more or less.
package struct RoundTrip: Sendable {
    package private(set) var statements: [PipelinedStatement] = []

    package init() {}

    package init(_ statements: [PipelinedStatement]) {
        self.statements = statements
    }

    package var isEmpty: Bool { statements.isEmpty }

    /// One statement's place: its rows in the results.
    package struct Slot: Sendable {
        fileprivate let index: Int
    }

    /// Another author's round trip inside this one: its results, read by that author's own slots.
    package struct Part: Sendable {
        fileprivate let offset: Int
    }

    @discardableResult
    package mutating func add(_ statement: PipelinedStatement) -> Slot {
        statements.append(statement)
        return Slot(index: statements.count - 1)
    }

    /// Statements whose results nobody reads (locks, settings, writes).
    package mutating func add(_ statements: [PipelinedStatement]) {
        self.statements += statements
    }

    @discardableResult
    package mutating func include(_ part: RoundTrip) -> Part {
        defer { statements += part.statements }
        return Part(offset: statements.count)
    }
}

/// What a round trip returned, read by the handles its authors hold.
package struct RoundTripResults: Sendable {
    private let rows: [PostgresRows]
    private let offset: Int

    init(_ rows: [PostgresRows], offset: Int = 0) {
        self.rows = rows
        self.offset = offset
    }

    package subscript(slot: RoundTrip.Slot) -> PostgresRows { rows[offset + slot.index] }

    /// An included author's results, for its own slots.
    package subscript(part: RoundTrip.Part) -> RoundTripResults { RoundTripResults(rows, offset: offset + part.offset) }
}

/// Where a participant's round trips go: the round trips of a transaction someone else owns
/// (`TransactionRoundTrips`), or a connection.
package protocol RoundTripSender {
    func send(_ trip: RoundTrip) throws -> RoundTripResults
}

extension PostgresConnection: RoundTripSender {
    /// Sends a round trip on its own: inside the transaction open on the connection, when its owner
    /// began one statement by statement (`transaction`), else as one implicit transaction (a
    /// pipeline's statements up to its sync point are all or nothing).
    package func send(_ trip: RoundTrip) throws -> RoundTripResults {
        RoundTripResults(trip.isEmpty ? [] : try pipeline(trip.statements))
    }
}
