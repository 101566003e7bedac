import Configuration
import Foundation
import LedgerSecrets
import LedgerSettings

extension SettingsReader {
    /// A secrets key from `key` (base64 of 32 bytes) or from the file `file` names, as a secret
    /// manager mounts it; both set is a mistake, said as one. The key is read as a secret, and a
    /// key that is not usable is said so without its value.
    mutating func secretsKey(_ key: ConfigKey, file: ConfigKey) -> SecretsKey? {
        switch (text(key, isSecret: true), text(file)) {
        case (nil, nil):
            return nil
        case (.some, .some):
            report(key, file, complaint: "are both set: set one")
            return nil
        case (let value?, nil):
            do { return try SecretsKey(base64: value) } catch {
                report(key, complaint: "is not a usable key: \(error)")
                return nil
            }
        case (nil, let path?):
            do { return try SecretsKey(file: URL(fileURLWithPath: path)) } catch {
                report(file, complaint: "(\(path)) does not hold a usable key: \(error)")
                return nil
            }
        }
    }
}
