import Foundation
import LedgerCore
import LedgerFormats

/// The app's own purchase on an Apple account (`AppTransaction`): what StoreKit signs for the app
/// itself, and what a RESCIND_CONSENT carries. Its environment is its `receiptType`; it is signed
/// as of `receiptCreationDate`.
package struct DecodedAppTransaction: Sendable, Equatable {
    /// Unique per Apple account and app; every in-app transaction made in the app carries it.
    package var appTransactionID: String?
    package var environment: AppleEnvironment
    package var bundleID: String
    package var appAppleID: Int64?
    /// The app version the user first bought or downloaded (CFBundleVersion on iOS).
    package var originalApplicationVersion: String?
    package var applicationVersion: String?
    package var originalPurchaseDate: Date?
    package var preorderDate: Date?
    /// iOS, macOS, tvOS, visionOS (raw: Apple adds platforms).
    package var originalPlatform: String?
    package var signedDate: Date

    init(_ payload: JSONTree, environment: AppleEnvironment, signedDate: Date) throws {
        guard let fields = SignedFields(payload), let bundleID = fields.string("bundleId") else {
            throw LedgerError(.malformed, "the app transaction payload is not a JSON object with a bundleId")
        }
        self.appTransactionID = fields.string("appTransactionId")
        self.environment = environment
        self.bundleID = bundleID
        self.appAppleID = fields.int64("appAppleId")
        self.originalApplicationVersion = fields.string("originalApplicationVersion")
        self.applicationVersion = fields.string("applicationVersion")
        self.originalPurchaseDate = fields.date("originalPurchaseDate")
        self.preorderDate = fields.date("preorderDate")
        self.originalPlatform = fields.string("originalPlatform")
        self.signedDate = signedDate
    }
}

extension SignedDataVerifier {
    /// Verifies an app's signed AppTransaction (from StoreKit, Apple's Get App Transaction Info,
    /// or a RESCIND_CONSENT) for one app and decodes it.
    package func verifyAppTransaction(_ jws: String, expecting expectation: Expectation) async throws -> DecodedAppTransaction {
        let verified = try await verify(jws, as: .appTransaction, expecting: expectation)
        return try DecodedAppTransaction(verified.tree, environment: verified.environment, signedDate: verified.signedDate)
    }
}
