/// One HTTP exchange with Apple, for metrics: which endpoint (Apple's path with its identifiers
/// as `{id}`: an id in a label would make a series per purchase), the HTTP status Apple
/// answered — nil when nothing came back — and what the client made of it. Every attempt is
/// one, the retried ones included: a rate limit shows as 429s before the call gives up.
package struct AppleCall: Sendable, Equatable {
    package var endpoint: String
    package var status: Int?
    package var outcome: String

    package init(endpoint: String, status: Int?, outcome: String) {
        self.endpoint = endpoint
        self.status = status
        self.outcome = outcome
    }
}
