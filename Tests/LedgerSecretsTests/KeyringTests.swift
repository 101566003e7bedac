import Foundation
import LedgerCore
import LedgerSecrets
import Testing

/// Sealing as the stores use it: a value opens only under a key that sealed it and only in the
/// row it was sealed for; during a rotation either key opens it.
@Suite struct KeyringTests {
    static func key() throws -> SecretsKey { try SecretsKey(base64: SecretsKey.generate()) }
    let row = StoredSecrets.sharedSecret(of: "com.example.game")

    @Test func aSealedValueOpensUnderItsKeyAndRowAndShowsNothingOfTheSecret() throws {
        let keyring = Keyring([try Self.key()])
        let secret = "3f1c0a9e7b5d4c2a1f0e9d8c7b6a5f4e"
        let sealed = keyring.seal(secret, for: row)
        #expect(sealed.hasPrefix("sealed:v1:\(keyring.ids[0]):"))
        #expect(!sealed.contains(secret) && !sealed.contains(Data(secret.utf8).base64EncodedString().prefix(12)))
        #expect(try keyring.open(sealed, for: row) == secret)
        #expect(keyring.seal(secret, for: row) != sealed, "a fresh nonce each time")
    }

    @Test func aValueCopiedToAnotherRowDoesNotOpen() throws {
        let keyring = Keyring([try Self.key()])
        let sealed = keyring.seal("a shared secret of the first app", for: row)
        for other in [
            StoredSecrets.sharedSecret(of: "com.example.other"), StoredSecrets.serverAPIKey(of: "com.example.game"),
            StoredSecrets.webhookSecret(of: "com.example.game", webhook: "orders"),
        ] {
            let error = #expect(throws: LedgerError.self) { try keyring.open(sealed, for: other) }
            #expect(error?.code == .secretUnavailable)
            #expect(error?.message.contains("sealed for another row or altered") == true, "\(String(describing: error))")
        }
        let one = StoredSecrets.webhookSecret(of: "a", webhook: "b|c")
        let two = SecretBinding(table: "ledger.webhooks", bundleID: "a|secret of webhook b", kind: "c")
        #expect(throws: LedgerError.self) { try keyring.open(keyring.seal("x", for: one), for: two) }
    }

    @Test func aValueUnderAnotherKeySaysWhichKeyItNeeds() throws {
        let (old, new) = (try Self.key(), try Self.key())
        let sealed = Keyring([old]).seal("webhook secret 0123456789", for: row)
        let error = #expect(throws: LedgerError.self) { try Keyring([new]).open(sealed, for: row) }
        #expect(error?.code == .secretUnavailable)
        #expect(error?.message.contains(old.id) == true && error?.message.contains(new.id) == true)
        #expect(error?.code.kind == .unavailable)
    }

    @Test func duringARotationEitherKeyOpensTheValue() throws {
        let (old, new) = (try Self.key(), try Self.key())
        let both = Keyring([old, new]).seal("the .p8 key", for: row)
        #expect(Keyring.keyIDs(of: both) == [old.id, new.id])
        #expect(try Keyring([old]).open(both, for: row) == "the .p8 key")
        #expect(try Keyring([new]).open(both, for: row) == "the .p8 key")
        let tampered = both.replacingOccurrences(of: "sealed:v1:\(old.id):", with: "sealed:v1:\(old.id):AAAA")
        #expect(throws: LedgerError.self) { try Keyring([old]).open(tampered, for: row) }
    }

    @Test func aValueStoredBeforeSealingIsReadAsItIs() throws {
        #expect(try Keyring([try Self.key()]).open("legacy clear secret", for: row) == "legacy clear secret")
        #expect(!Keyring.isSealed("legacy clear secret"))
    }

    @Test func keysAreReadFromBase64OrRawFilesAndOtherwiseRefused() throws {
        let text = SecretsKey.generate()
        let key = try SecretsKey(base64: "  \(text)\n")
        let again = try SecretsKey(base64: text)
        #expect(key.id.count == 16 && key.id == again.id)
        #expect(!text.contains(key.id))
        #expect(throws: SecretsKeyError.notBase64) { try SecretsKey(base64: "not a key") }
        #expect(throws: SecretsKeyError.wrongLength(16)) { try SecretsKey(base64: Data(count: 16).base64EncodedString()) }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let raw = Data((0..<32).map { UInt8($0) })
        try raw.write(to: folder.appendingPathComponent("raw"))
        try Data((text + "\n").utf8).write(to: folder.appendingPathComponent("text"))
        #expect(try SecretsKey(file: folder.appendingPathComponent("raw")).id == (try SecretsKey(bytes: raw)).id)
        #expect(try SecretsKey(file: folder.appendingPathComponent("text")).id == key.id)
        #expect(throws: SecretsKeyError.self) { try SecretsKey(file: folder.appendingPathComponent("missing")) }
    }
}
