import AppStore
import Foundation
import LedgerCore

/// Where Apple's App Store Server API is and how patiently to ask it.
package struct ServerAPIConfiguration: Sendable {
    /// Apple's hosts; the simulator's, or a proxy's, in tests and demos.
    package static let appleProductionURL = "https://api.storekit.apple.com"
    package static let appleSandboxURL = "https://api.storekit-sandbox.apple.com"

    package var productionURL: String
    package var sandboxURL: String
    /// Attempts for what may pass (429, 5xx, Apple's retryable codes, timeouts); a `Retry-After`
    /// reaching past the budget ends the call at once, as unavailable.
    package var patience: Patience

    package init(
        productionURL: String = Self.appleProductionURL, sandboxURL: String = Self.appleSandboxURL, patience: Patience = .appStoreServerAPI
    ) {
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
        self.patience = patience
    }

    /// The API's base URL for an environment; Xcode and LocalTesting data never reach Apple.
    func baseURL(_ environment: AppleEnvironment) -> String? {
        switch environment {
        case .production: productionURL.hasSuffix("/") ? String(productionURL.dropLast()) : productionURL
        case .sandbox: sandboxURL.hasSuffix("/") ? String(sandboxURL.dropLast()) : sandboxURL
        case .xcode, .localTesting: nil
        }
    }
}

extension Patience {
    /// How patiently the App Store Server API is asked: backfills and lookups run in the
    /// background, so five attempts within a minute.
    package static let appStoreServerAPI = Patience(
        maxAttempts: 5, backoffBase: .milliseconds(500), backoffCap: .seconds(8), totalBudget: .seconds(60), requestTimeout: .seconds(30))
}
