import Foundation
import LedgerCore
import Synchronization

/// Stored events decoded before, by their type and data: an ingestion group decodes the events it
/// appends to find whom they concern, reads every fact of those users back in the same transaction
/// and decodes them again, and the change feed decodes them a third time — each time the same JSON
/// into the same value (decoding was the largest piece of the writer's own work).
///
/// Keyed by the type and data themselves, not the event id: decoding is a pure function of those
/// two, so an entry can never be stale, whatever was rolled back or written since. Two generations
/// bound the memory: when the newer one is full it becomes the older, and the older is dropped.
package final class DecodedEvents: Sendable {
    private struct Key: Hashable {
        var type: String
        var data: String
    }

    private struct Generations {
        var newer: [Key: LedgerEvent] = [:]
        var older: [Key: LedgerEvent] = [:]
    }

    /// One per process: the group's writer, the workers and the readers share what they decoded.
    package static let shared = DecodedEvents(generation: 8_192)

    private let generation: Int
    private let entries = Mutex(Generations())

    package init(generation: Int) {
        precondition(generation > 0, "a generation holds at least one event")
        self.generation = generation
    }

    /// The event of `type` stored as `data`, decoded once while it stays among the recent ones.
    package func event(type: String, data: String) throws -> LedgerEvent {
        let key = Key(type: type, data: data)
        if let known = entries.withLock({ $0.newer[key] ?? $0.older[key] }) { return known }
        let event = try LedgerEvent(typeName: type, data: Data(data.utf8))
        entries.withLock { generations in
            if generations.newer.count >= generation {
                generations.older = generations.newer
                generations.newer = [:]
            }
            generations.newer[key] = event
        }
        return event
    }
}
