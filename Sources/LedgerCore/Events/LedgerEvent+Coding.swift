import Foundation
import LedgerFormats

/// Events travel as (type name, JSON data). Dates are milliseconds since the epoch, like Apple's,
/// so a round trip is exact; keys are sorted so the same event always has the same bytes.
extension LedgerEvent {
    package static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    package static let decoder: JSONDecoder = makeDecoder()

    /// A decoder with the events' date strategy (one per thread when decoding in parallel).
    package static func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return decoder
    }

    package struct UnknownType: Error, CustomStringConvertible {
        package let typeName: String
        package var description: String { "unknown event type \(typeName)" }
    }

    package func encodedData() throws -> Data {
        switch self {
        case .appConfigured(let value): try Self.encoder.encode(value)
        case .productConfigured(let value): try Self.encoder.encode(value)
        case .currencyConfigured(let value): try Self.encoder.encode(value)
        case .currencyGranted(let value): try Self.encoder.encode(value)
        case .spendReversed(let value): try Self.encoder.encode(value)
        case .purchased(let value), .restored(let value), .renewed(let value), .recovered(let value):
            try StoredEventJSON.bytes(value).map { Data($0) } ?? Self.encoder.encode(value)
        case .autoRenewChanged(let value), .renewalPreferenceChanged(let value), .renewalFailed(let value), .expired(let value):
            try Self.encoder.encode(value)
        case .refunded(let value), .revoked(let value): try Self.encoder.encode(value)
        case .refundReversed(let value): try Self.encoder.encode(value)
        case .transactionClaimed(let value): try StoredEventJSON.bytes(value).map { Data($0) } ?? Self.encoder.encode(value)
        case .ownershipTransferred(let value): try Self.encoder.encode(value)
        case .consumed(let value): try Self.encoder.encode(value)
        case .promotionalGranted(let value): try Self.encoder.encode(value)
        case .promotionalRevoked(let value): try Self.encoder.encode(value)
        case .userErased(let value): try Self.encoder.encode(value)
        case .balanceMoved(let value): try Self.encoder.encode(value)
        case .appTransactionRecorded(let value): try Self.encoder.encode(value)
        case .offerSigned(let value): try Self.encoder.encode(value)
        case .retentionDecided(let value): try Self.encoder.encode(value)
        case .renewalExtended(let value): try Self.encoder.encode(value)
        case .massRenewalExtensionRequested(let value): try Self.encoder.encode(value)
        case .appAccountTokenSent(let value): try Self.encoder.encode(value)
        case .appleNotificationReceived(let value): try Self.encoder.encode(value)
        case .consumptionInformationSent(let value): try Self.encoder.encode(value)
        case .consentRescinded(let value): try Self.encoder.encode(value)
        }
    }

    /// Decodes a stored event with `StorageDecoder` (the fast path every reader takes).
    package init(typeName: String, data: Data) throws {
        try self.init(typeName: typeName, tree: try JSONTree.parse(data))
    }

    /// Decodes a stored event already parsed.
    package init(typeName: String, tree: JSONTree) throws {
        switch LedgerEventType(rawValue: typeName) {
        case .purchased: self = .purchased(try TransactionFacts(stored: tree))
        case .restored: self = .restored(try TransactionFacts(stored: tree))
        case .renewed: self = .renewed(try TransactionFacts(stored: tree))
        case .recovered: self = .recovered(try TransactionFacts(stored: tree))
        default: try self.init(typeName: typeName, payload: StoragePayload(tree: tree))
        }
    }

    /// Decodes a stored event with Foundation's `JSONDecoder` — the reference the fast path is
    /// tested against.
    package init(typeName: String, data: Data, decoder: JSONDecoder) throws {
        try self.init(typeName: typeName, payload: FoundationPayload(data: data, decoder: decoder))
    }

    private init(typeName: String, payload: some PayloadDecoding) throws {
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try payload.decode(type) }
        guard let type = LedgerEventType(rawValue: typeName) else { throw UnknownType(typeName: typeName) }
        switch type {
        case .appConfigured: self = .appConfigured(try decode(AppSettings.self))
        case .productConfigured: self = .productConfigured(try decode(ProductDefinition.self))
        case .currencyConfigured: self = .currencyConfigured(try decode(CurrencyDefinition.self))
        case .currencyGranted: self = .currencyGranted(try decode(CurrencyGrant.self))
        case .spendReversed: self = .spendReversed(try decode(SpendReversal.self))
        case .purchased: self = .purchased(try decode(TransactionFacts.self))
        case .restored: self = .restored(try decode(TransactionFacts.self))
        case .renewed: self = .renewed(try decode(TransactionFacts.self))
        case .recovered: self = .recovered(try decode(TransactionFacts.self))
        case .autoRenewChanged: self = .autoRenewChanged(try decode(RenewalFacts.self))
        case .renewalPreferenceChanged: self = .renewalPreferenceChanged(try decode(RenewalFacts.self))
        case .renewalFailed: self = .renewalFailed(try decode(RenewalFacts.self))
        case .expired: self = .expired(try decode(RenewalFacts.self))
        case .refunded: self = .refunded(try decode(RevocationFacts.self))
        case .revoked: self = .revoked(try decode(RevocationFacts.self))
        case .refundReversed: self = .refundReversed(try decode(RefundReversal.self))
        case .transactionClaimed: self = .transactionClaimed(try decode(Claim.self))
        case .ownershipTransferred: self = .ownershipTransferred(try decode(Transfer.self))
        case .consumed: self = .consumed(try decode(Consumption.self))
        case .promotionalGranted: self = .promotionalGranted(try decode(PromotionalGrant.self))
        case .promotionalRevoked: self = .promotionalRevoked(try decode(PromotionalRevocation.self))
        case .userErased: self = .userErased(try decode(UserErasure.self))
        case .balanceMoved: self = .balanceMoved(try decode(BalanceMove.self))
        case .appTransactionRecorded: self = .appTransactionRecorded(try decode(AppTransactionFacts.self))
        case .offerSigned: self = .offerSigned(try decode(OfferSignature.self))
        case .retentionDecided: self = .retentionDecided(try decode(RetentionDecision.self))
        case .renewalExtended: self = .renewalExtended(try decode(RenewalExtension.self))
        case .massRenewalExtensionRequested: self = .massRenewalExtensionRequested(try decode(MassRenewalExtension.self))
        case .appAccountTokenSent: self = .appAccountTokenSent(try decode(AppAccountTokenSent.self))
        case .appleNotificationReceived: self = .appleNotificationReceived(try decode(AppleNotification.self))
        case .consumptionInformationSent: self = .consumptionInformationSent(try decode(ConsumptionAnswer.self))
        case .consentRescinded: self = .consentRescinded(try decode(ConsentRescission.self))
        }
    }
}

private protocol PayloadDecoding {
    func decode<T: Decodable>(_ type: T.Type) throws -> T
}

private struct StoragePayload: PayloadDecoding {
    let tree: JSONTree
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try StorageDecoder.decode(type, from: tree) }
}

private struct FoundationPayload: PayloadDecoding {
    let data: Data
    let decoder: JSONDecoder
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decode(type, from: data) }
}

/// A domain event as recorded: the fact, its business time, its place in the log, and the
/// content hash of the raw evidence it came from (receipt, JWS, notification), if any.
package struct RecordedFact: Sendable, Equatable {
    package var event: LedgerEvent
    /// Apple's signed date, or when the app or support acted: what "as of T" orders by.
    package var occurredAt: Date
    package var recordedAt: Date
    /// Global order (from the event store) — the tiebreak between equal business times.
    package var sequence: Int64
    package var evidence: String?

    package init(event: LedgerEvent, occurredAt: Date, recordedAt: Date? = nil, sequence: Int64, evidence: String? = nil) {
        self.event = event
        self.occurredAt = occurredAt
        self.recordedAt = recordedAt ?? occurredAt
        self.sequence = sequence
        self.evidence = evidence
    }

    /// Apple's time decides order: a renewal signed before a refund but delivered after it is
    /// still applied before it.
    package static func businessOrder(_ a: RecordedFact, _ b: RecordedFact) -> Bool {
        (a.occurredAt, a.sequence) < (b.occurredAt, b.sequence)
    }
}
