/// One exchange with Google's Developer API, as the metrics count it: which endpoint, the HTTP
/// status if one came back, and what the client did next — so a quota running out shows as 429s
/// retried on the endpoint that spent it, and a refused account as 401s and 403s refused.
package struct GoogleCall: Sendable, Equatable {
    package enum Outcome: String, Sendable {
        /// A 2xx: Google's answer was read.
        case answered
        /// A 401 with a token that may have been revoked early: a new one is fetched and the call repeated.
        case tokenRefreshed = "token_refreshed"
        /// A 429, a 5xx or no answer, tried again within the client's patience.
        case retried
        /// A 429, a 5xx or no answer when patience ran out: the caller hears Google is away.
        case unavailable
        /// Any other 4xx: final, the caller hears what Google refused.
        case refused
    }

    package var endpoint: String
    package var status: Int?
    package var outcome: Outcome

    package init(endpoint: String, status: Int?, outcome: Outcome) {
        self.endpoint = endpoint
        self.status = status
        self.outcome = outcome
    }

    /// A failed attempt and what the retry plan decided about it.
    init(endpoint: String, _ attempt: GoogleRetryPlan.Outcome, _ decision: GoogleRetryPlan.Decision) {
        switch (attempt, decision) {
        case (.transportFailed, .retry): self.init(endpoint: endpoint, status: nil, outcome: .retried)
        case (.transportFailed, .stop): self.init(endpoint: endpoint, status: nil, outcome: .unavailable)
        case (.answered(let status, _), .retry): self.init(endpoint: endpoint, status: status, outcome: .retried)
        case (.answered(let status, _), .stop):
            self.init(endpoint: endpoint, status: status, outcome: status == 429 || status >= 500 ? .unavailable : .refused)
        }
    }
}
