/// One user of one app: how the ledger names a user everywhere (user ids are the app's own, so
/// the same id in two apps is two users).
package struct UserKey: Hashable, Sendable {
    package var bundleID: String
    package var userID: String

    package init(bundleID: String, userID: String) {
        self.bundleID = bundleID
        self.userID = userID
    }
}

/// One original transaction of one app: what ownership and finance rows are kept by.
package struct TransactionKey: Hashable, Sendable {
    package var bundleID: String
    package var originalTransactionID: String

    package init(bundleID: String, originalTransactionID: String) {
        self.bundleID = bundleID
        self.originalTransactionID = originalTransactionID
    }
}
