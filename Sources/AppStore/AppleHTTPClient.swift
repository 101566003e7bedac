import AsyncHTTPClient

extension HTTPClient {
    /// The client for calls to Apple: like AsyncHTTPClient's shared one (never shut down), but
    /// making no spans of its own. Those would record whole URLs — transaction ids in Apple's
    /// paths, revision and pagination tokens in their queries — where the ledger's span of each
    /// call names its endpoint with `{id}`.
    package static let apple: HTTPClient = {
        var configuration = HTTPClient.Configuration.singletonConfiguration
        configuration.tracing.tracer = nil
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()
}
