import LedgerCore

extension Patience {
    /// How patiently the Developer API is asked: Google's answers are quick, and a push or a claim
    /// waits on them, so a retry starts within half a second and the whole call gives up after 30 s
    /// (the server then answers 503 with the wait Google asked for).
    package static let googleDeveloperAPI = Patience(
        maxAttempts: 5, backoffBase: .milliseconds(500), backoffCap: .seconds(8), totalBudget: .seconds(30), requestTimeout: .seconds(30))
}
