/// One round over the rows a store's outbox claimed — a transaction to finish at Apple, a purchase
/// to acknowledge at Google, a CONSUMPTION_REQUEST to answer: each row worked in turn; one whose
/// work threw is handed back to wait for its own retry and counts as `failed`, and the round goes
/// on, since the store missing or refusing one row is that row's business. Every outcome is
/// observed (the metrics) and answered by the row's key.
enum OutboxRound {
    static func run<Row>(
        _ rows: [Row], key: (Row) -> String, observe: (String) -> Void, work: (Row) async throws -> String,
        handBack: (Row, any Error) async -> Void
    ) async -> [String: String] {
        var outcomes: [String: String] = [:]
        for row in rows {
            let outcome: String
            do {
                outcome = try await work(row)
            } catch {
                await handBack(row, error)
                outcome = "failed"
            }
            outcomes[key(row)] = outcome
            observe(outcome)
        }
        return outcomes
    }
}
