extension LedgerError {
    /// Every code the API answers with: the stable names callers switch on (docs/api.md lists
    /// them all, and a test holds the list and these cases equal). Apple's refusals are among
    /// them: evidence that did not verify is refused where it is verified, in these words.
    package enum Code: String, CaseIterable, Sendable, CustomStringConvertible {
        // Malformed or invalid input.
        case malformedJSON = "malformed_json"
        case invalidBody = "invalid_body"
        case invalidRequest = "invalid_request"
        case invalidTime = "invalid_time"
        case invalidPosition = "invalid_position"
        case invalidLimit = "invalid_limit"
        case invalidCursor = "invalid_cursor"
        case invalidWait = "invalid_wait"
        case invalidAmount = "invalid_amount"
        case invalidIdempotencyKey = "invalid_idempotency_key"
        case invalidUserID = "invalid_user_id"
        case invalidGrantID = "invalid_grant_id"
        case invalidBundleID = "invalid_bundle_id"
        case invalidEnvironment = "invalid_environment"
        case invalidRestorePolicy = "invalid_restore_policy"
        case invalidProductID = "invalid_product_id"
        case invalidProductType = "invalid_product_type"
        case invalidDuration = "invalid_duration"
        case invalidEntitlements = "invalid_entitlements"
        case invalidGrants = "invalid_grants"
        case invalidGrant = "invalid_grant"
        case invalidFormat = "invalid_format"
        case invalidSharedSecret = "invalid_shared_secret"
        case invalidAppStoreServerAPI = "invalid_app_store_server_api"
        case invalidConsumptionPolicy = "invalid_consumption_policy"
        case invalidAppleAppID = "invalid_apple_app_id"
        case invalidAppPurchase = "invalid_app_purchase"
        case invalidOffer = "invalid_offer"
        case invalidWebhook = "invalid_webhook"
        case invalidTransactionID = "invalid_transaction_id"
        case invalidDays = "invalid_days"
        case invalidReasonCode = "invalid_reason_code"
        case invalidRequestID = "invalid_request_id"
        case invalidStorefront = "invalid_storefront"
        case invalidMerge = "invalid_merge"
        case missingUserID = "missing_user_id"
        case missingTransactionID = "missing_transaction_id"
        case notASubscription = "not_a_subscription"
        case malformed = "malformed_evidence"
        case invalidAppAccountToken = "invalid_app_account_token"
        case notOriginalTransactionID = "not_original_transaction_id"
        case invalidGoogleServiceAccount = "invalid_google_service_account"
        case invalidGooglePlay = "invalid_google_play"
        case invalidStore = "invalid_store"
        case invalidPurchaseToken = "invalid_purchase_token"
        case invalidRetention = "invalid_retention"
        case invalidProofRequest = "invalid_proof_request"
        case invalidCurrency = "invalid_currency"
        case invalidReference = "invalid_reference"

        // No key, or an unknown or revoked one.
        case missingAPIKey = "missing_api_key"
        case invalidAPIKey = "invalid_api_key"
        // A Pub/Sub push whose OIDC token is missing or fails Google's checks.
        case invalidPushToken = "invalid_push_token"

        // The key lacks the scope or the app.
        case insufficientScope = "insufficient_scope"
        case appNotAllowed = "app_not_allowed"

        // Unknown here, or unknown to Apple.
        case notFound = "not_found"
        case unknownApp = "unknown_app"
        case unknownProduct = "unknown_product"
        case unknownOffer = "unknown_offer"
        case unknownGrant = "unknown_grant"
        case unknownCurrency = "unknown_currency"
        case unknownSpend = "unknown_spend"
        case unknownTransaction = "unknown_transaction"
        case unknownAppAccountToken = "unknown_app_account_token"
        case unknownWebhook = "unknown_webhook"
        case unknownUser = "unknown_user"
        case appleTransactionNotFound = "apple_transaction_not_found"
        case appleAppTransactionNotFound = "apple_app_transaction_not_found"
        case appleOrderNotFound = "apple_order_not_found"
        case googlePurchaseNotFound = "google_purchase_not_found"
        case notInTree = "not_in_tree"

        // A route without that method.
        case methodNotAllowed = "method_not_allowed"

        // Contradicts what is recorded, or what Apple allows.
        case conflict = "conflict"
        case concurrentChange = "concurrent_change"
        case insufficientBalance = "insufficient_balance"
        case transactionOwnedByAnotherUser = "transaction_owned_by_another_user"
        case idempotencyKeyReused = "idempotency_key_reused"
        case appAccountTokenLinkedToAnotherUser = "app_account_token_linked_to_another_user"
        case notEligible = "not_eligible"
        case reconciliationLeaseLost = "reconciliation_lease_lost"
        case extensionIneligible = "subscription_extension_ineligible"
        case extensionLimitReached = "extension_limit_reached"
        case familySharedNotSupported = "family_shared_not_supported"
        case invalidPurchaseState = "invalid_purchase_state"

        // Too many failed attempts from one address, or a key over its request limit: wait, as
        // `Retry-After` says.
        case tooManyAttempts = "too_many_attempts"
        case rateLimited = "rate_limited"

        // A body over the limit.
        case bodyTooLarge = "body_too_large"

        // Evidence that did not verify; Apple cannot be asked as the app is set up.
        case unsupportedAlgorithm = "unsupported_algorithm"
        case missingCertificateChain = "missing_certificate_chain"
        case untrustedChain = "untrusted_chain"
        case invalidSignature = "invalid_signature"
        case bundleMismatch = "bundle_mismatch"
        case appMismatch = "app_apple_id_mismatch"
        case environmentNotAllowed = "environment_not_allowed"
        case receiptInvalid = "receipt_invalid"
        case sharedSecretMismatch = "shared_secret_mismatch"
        case sharedSecretMissing = "shared_secret_not_configured"
        case appleAPIUnauthorized = "apple_api_unauthorized"
        case appleAPINotConfigured = "app_store_server_api_not_configured"
        case appleAPIRefused = "apple_api_refused"
        case packageMismatch = "package_mismatch"
        case productMismatch = "product_mismatch"
        case googlePlayNotConfigured = "google_play_not_configured"
        case retentionNotConfigured = "retention_not_configured"
        case digestKeyNotConfigured = "digest_key_not_configured"
        case purchaseTokenExpired = "purchase_token_expired"
        case googleAPIUnauthorized = "google_api_unauthorized"
        case googleAPIRefused = "google_api_refused"

        // Apple or the database away: try again.
        case appleUnavailable = "apple_unavailable"
        case googleUnavailable = "google_unavailable"
        case databaseUnavailable = "database_unavailable"
        case secretUnavailable = "secret_unavailable"

        // A bug or a fault of the database.
        case internalError = "internal_error"

        package var description: String { rawValue }

        /// The kind of failure a code usually is (`LedgerError(_:_:kind:)` says otherwise).
        package var kind: Kind {
            switch self {
            case .malformedJSON, .invalidBody, .invalidRequest, .invalidTime, .invalidPosition, .invalidLimit,
                .invalidCursor, .invalidWait, .invalidAmount, .invalidIdempotencyKey, .invalidUserID, .invalidGrantID,
                .invalidBundleID, .invalidEnvironment, .invalidRestorePolicy, .invalidProductID, .invalidProductType,
                .invalidDuration, .invalidEntitlements, .invalidGrants, .invalidGrant, .invalidFormat,
                .invalidSharedSecret, .invalidAppStoreServerAPI, .invalidConsumptionPolicy, .invalidAppleAppID,
                .invalidAppPurchase, .invalidOffer, .invalidWebhook, .invalidTransactionID, .invalidDays,
                .invalidReasonCode, .invalidRequestID, .invalidStorefront, .invalidMerge, .missingUserID, .missingTransactionID,
                .notASubscription, .malformed, .invalidAppAccountToken, .notOriginalTransactionID, .invalidGoogleServiceAccount,
                .invalidGooglePlay, .invalidStore, .invalidPurchaseToken, .invalidRetention, .invalidProofRequest, .invalidCurrency,
                .invalidReference:
                .invalid
            case .missingAPIKey, .invalidAPIKey, .invalidPushToken: .unauthenticated
            case .insufficientScope, .appNotAllowed: .forbidden
            case .notFound, .unknownApp, .unknownProduct, .unknownOffer, .unknownGrant, .unknownCurrency, .unknownSpend,
                .unknownTransaction,
                .unknownAppAccountToken, .unknownWebhook, .unknownUser, .appleTransactionNotFound, .appleAppTransactionNotFound,
                .appleOrderNotFound, .googlePurchaseNotFound, .notInTree:
                .notFound
            case .methodNotAllowed: .methodNotAllowed
            case .conflict, .concurrentChange, .insufficientBalance, .transactionOwnedByAnotherUser,
                .idempotencyKeyReused, .appAccountTokenLinkedToAnotherUser, .notEligible, .reconciliationLeaseLost,
                .extensionIneligible, .extensionLimitReached, .familySharedNotSupported, .invalidPurchaseState:
                .conflict
            case .tooManyAttempts, .rateLimited: .throttled
            case .bodyTooLarge: .tooLarge
            case .unsupportedAlgorithm, .missingCertificateChain, .untrustedChain, .invalidSignature, .bundleMismatch,
                .appMismatch, .environmentNotAllowed, .receiptInvalid, .sharedSecretMismatch, .sharedSecretMissing,
                .appleAPIUnauthorized, .appleAPINotConfigured, .appleAPIRefused, .packageMismatch, .purchaseTokenExpired,
                .googleAPIUnauthorized, .googleAPIRefused, .productMismatch, .googlePlayNotConfigured, .retentionNotConfigured,
                .digestKeyNotConfigured:
                .unverifiable
            case .appleUnavailable, .googleUnavailable, .databaseUnavailable, .secretUnavailable: .unavailable
            case .internalError: .fault
            }
        }
    }
}
