/// A failure of a lower layer (the database, the event store) that knows what it means for a
/// caller: the `LedgerError` it is answered with, itself as the cause. Lower layers do not import
/// the domain, so their conformances are declared where the server is composed.
package protocol LedgerErrorConvertible: Error {
    var ledgerError: LedgerError { get }
}
