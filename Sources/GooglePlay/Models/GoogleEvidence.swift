import Foundation
import LedgerCore

/// Google's answer decoded, with the bytes it came as: the ledger keeps Google's own words as
/// evidence, and a field this code does not know yet is in those bytes, not lost.
package struct GoogleEvidence<Model: Sendable>: Sendable {
    package var model: Model
    package var raw: Data

    package init(model: Model, raw: Data) {
        self.model = model
        self.raw = raw
    }
}

extension GoogleEvidence where Model: Decodable {
    /// Decodes `raw`; a body that is not the model is malformed evidence, said without its bytes.
    package static func decode(_ raw: Data, as what: String) throws(LedgerError) -> GoogleEvidence {
        GoogleEvidence(model: try GoogleDecoding.decode(Model.self, from: raw, as: what), raw: raw)
    }
}

enum GoogleDecoding {
    static func decode<T: Decodable>(_ type: T.Type, from data: Data, as what: String) throws(LedgerError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: data)
        } catch {
            throw LedgerError(.malformed, "\(what) did not decode: \(reason(error))")
        }
    }

    /// Where decoding failed and why, by field path: never the value, which may be a token.
    static func reason(_ error: any Error) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            keys.isEmpty ? "the top level" : keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch error as? DecodingError {
        case .keyNotFound(let key, let context)?: return "\(path(context.codingPath + [key])) is missing"
        case .typeMismatch(_, let context)?: return "\(path(context.codingPath)) has another type"
        case .valueNotFound(_, let context)?: return "\(path(context.codingPath)) is null"
        case .dataCorrupted(let context)?: return "\(path(context.codingPath)): \(context.debugDescription.prefix(80))"
        default: return "not JSON"
        }
    }
}
