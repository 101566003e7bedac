import Foundation
import LedgerFormats

/// Apple's `RealtimeResponseBody` as the ledger writes it: one member, its fields sorted.
extension RetentionDesk {
    /// `{"<member>": {fields…, signature?}}`, keys sorted.
    static func body(_ member: String, _ fields: [String: String], signature: (key: String, value: SignatureValue)? = nil) -> [UInt8] {
        var json = JSONWriter(reservingCapacity: 1024)
        json.object { json in
            json.key(member)
            json.object { json in
                for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
                    json.key(key)
                    json.value(value)
                }
                guard let signature else { return }
                json.key(signature.key)
                switch signature.value {
                case .jws(let jws): json.value(jws)
                case .legacy(let fields, let timestamp):
                    json.object { json in
                        for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
                            json.key(key)
                            json.value(value)
                        }
                        json.key("timestamp")
                        json.value(timestamp)
                    }
                }
            }
        }
        return json.bytes
    }
}
