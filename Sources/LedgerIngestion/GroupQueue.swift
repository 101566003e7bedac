/// The waiting room of group commit, with no I/O: what arrives while a group is written waits
/// for the next group; one writer at a time takes groups until nobody waits.
///
/// A state machine that answers each event with what to do (postgres-nio's shape): the
/// caller does the I/O and reports back, so every rule here is testable without a database.
package struct GroupQueue<Item> {
    /// What a request that just arrived must do.
    package enum Arrival: Equatable {
        /// Nobody is writing: become the writer (then ask `nextGroup` until it says `.idle`).
        case write
        /// A writer is at work; it will take this request in one of its next groups.
        case wait
    }

    /// What the writer does next.
    package enum Next {
        /// Write these requests as one group, then ask again.
        case write([Item])
        /// Nobody waits: the writer stops; the next arrival becomes the writer.
        case idle
    }

    package let maximumGroup: Int
    private var waiting: [Item] = []
    private var writing = false

    package init(maximumGroup: Int) {
        precondition(maximumGroup > 0, "a group holds at least one request")
        self.maximumGroup = maximumGroup
    }

    package mutating func arrive(_ item: Item) -> Arrival {
        waiting.append(item)
        if writing { return .wait }
        writing = true
        return .write
    }

    /// The writer's question after each group (and before its first): the oldest waiting
    /// requests, at most `maximumGroup` of them.
    package mutating func nextGroup() -> Next {
        guard writing else { return .idle }
        guard !waiting.isEmpty else {
            writing = false
            return .idle
        }
        let group = Array(waiting.prefix(maximumGroup))
        waiting.removeFirst(group.count)
        return .write(group)
    }

    var waitingCount: Int { waiting.count }
    var isWriting: Bool { writing }
}
