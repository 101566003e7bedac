import LedgerEventStore

/// The highest change position this server knows to be announced, raised by its own change
/// projection and, through LISTEN, by any other server's. Long polls and the webhook dispatcher
/// wait on it instead of polling the table.
package final class ChangeNotifications: Sendable {
    package static let channel = "ledger_changes"
    private let announced = Watermark<Int64>(0)

    package init() {}

    package var position: Int64 { announced.value }

    package func announce(_ position: Int64) { announced.raise(to: position) }

    /// True once a change after `position` is announced; false after `timeout`.
    package func wait(after position: Int64, timeout: Duration) async -> Bool {
        await announced.wait(reaching: position + 1, timeout: timeout)
    }

    /// Another server's announcement (`EventStore.runNotifications` hears the channel). After a
    /// reconnection nothing says what was missed; waiters look again when their timeout runs out,
    /// as they do anyway.
    package func heard(_ payload: String) { announced.raise(to: Int64(payload) ?? 0) }
}
