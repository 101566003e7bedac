import EmbeddedPostgres
import Foundation
import LedgerPostgres
import LedgerTestSupport
import Testing

/// A server half-alive — answering, its database answering, one of its background parts unable
/// to work — says so in `/readyz` and exits with a failure, so that its supervisor restarts it;
/// a server waiting for its database is not stuck and stays.
@Suite(.takingTurns) struct StuckServerTests {
    @Test func aPartFailingWhileTheDatabaseAnswersIsStuckAndTheServerExits() async throws {
        let served = try await ServedLedger("stuck", environment: ["LEDGER_STUCK_AFTER": "2s"])
        defer { served.stop() }
        let (database, pid) = (served.database, served.pid)
        let url = served.base + "/readyz"
        let ready = try await poll(url, until: 200)
        #expect(ready?.0 == 200 && ready?.1.contains(#""change projection":"ok""#) == true, "\(String(describing: ready))")
        // Every background part reports, the two that talk to Apple included.
        for part in [
            "notifications", "timeline cache", "projection worker", "webhook deliveries", "reconciliation with Apple",
            "consumption responder",
        ] {
            #expect(ready?.1.contains(#""\#(part)":"ok""#) == true, "\(part): \(String(describing: ready))")
        }

        // The change projection's clock table goes away behind the server's back: every sweep
        // fails, while the database, the projection worker and the listener are fine.
        let superuser = try PostgresConnection.connect(TestCluster.superuser(database))
        try superuser.execute(script: "ALTER TABLE ledger.change_clock RENAME TO change_clock_away")
        // What /readyz says, if this test's polls see it before the watchdog stops the server
        // (it asks every 5 s; a loaded machine may answer these polls later than that).
        if let stuck = try await poll(url, until: 503, seconds: 30), stuck.0 == 503 {
            #expect(stuck.1.contains(#""change projection":"stuck: failing for"#) && stuck.1.contains("change_clock"), "\(stuck.1)")
        }

        let status = await Task.detached { () -> Int32? in
            for _ in 0..<300 {
                if let status = ChildProcess.poll(pid) { return status }
                usleep(100_000)
            }
            return nil
        }.value
        let output = served.output
        #expect(status == 70, "the server exits with a failure: \(String(describing: status)); \(output.suffix(2000))")
        #expect(
            output.contains("cannot recover by itself") && output.contains("change projection is stuck: failing for"),
            "\(output.suffix(2000))")
        #expect(output.contains("change_clock"), "the reason says what fails: \(output.suffix(2000))")
        let failing = output.components(separatedBy: "change projection failing").count - 1
        #expect(failing == 1, "its failing rounds are one line, said when they started: \(output.suffix(2000))")
    }
}
