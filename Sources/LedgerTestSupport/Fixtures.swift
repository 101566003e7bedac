import Foundation
import LedgerEventStore

/// Small builders so tests read like the behaviour they pin.
package func testEvent(_ type: String = "TestHappened", data: String = #"{"n": 1}"#, id: UUID = UUID(), occurredAt: Date? = nil) -> NewEvent
{
    NewEvent(id: id, type: type, data: data, occurredAt: occurredAt)
}

package func uniqueStream(_ prefix: String = "test") -> String {
    "\(prefix)-\(UUID().uuidString.lowercased())"
}
