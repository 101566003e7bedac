import LedgerChanges
import Testing

/// Long polls of the change feed wait on what this server's change projection or another's
/// announced (their NOTIFY payload is the last position).
@Suite struct ChangeNotificationsTests {
    @Test func aWaitEndsWhenAPositionPastItIsAnnounced() async {
        let notifications = ChangeNotifications()
        async let waited = notifications.wait(after: 10, timeout: .seconds(10))
        try? await Task.sleep(for: .milliseconds(50))
        notifications.heard("11")
        #expect(await waited)
    }

    @Test func aWaitForWhatIsAlreadyAnnouncedReturnsAtOnceAndOtherwiseTimesOut() async {
        let notifications = ChangeNotifications()
        notifications.announce(20)
        #expect(await notifications.wait(after: 19, timeout: .seconds(10)))
        #expect(await notifications.wait(after: 20, timeout: .milliseconds(50)) == false)
        notifications.heard("not a number")
        #expect(await notifications.wait(after: 20, timeout: .milliseconds(50)) == false, "a payload that is no position wakes nobody")
    }
}
