import Testing

@testable import LedgerIngestion

/// Group commit's waiting room, driven by hand: who writes, who waits, what each group holds.
@Suite struct GroupQueueTests {
    @Test func theFirstArrivalWritesAloneAndLaterOnesWaitForTheNextGroup() {
        var queue = GroupQueue<Int>(maximumGroup: 64)
        #expect(queue.arrive(1) == .write)
        guard case .write(let first) = queue.nextGroup() else { Issue.record("the writer found nothing"); return }
        #expect(first == [1])
        // While the first group is written, others arrive: none of them writes.
        #expect(queue.arrive(2) == .wait)
        #expect(queue.arrive(3) == .wait)
        guard case .write(let second) = queue.nextGroup() else { Issue.record("the waiting were not taken"); return }
        #expect(second == [2, 3])
        guard case .idle = queue.nextGroup() else { Issue.record("an empty queue gave a group"); return }
        #expect(!queue.isWriting)
        // After the writer stopped, the next arrival writes again.
        #expect(queue.arrive(4) == .write)
    }

    @Test func aGroupHoldsAtMostTheMaximumOldestFirst() {
        var queue = GroupQueue<Int>(maximumGroup: 3)
        #expect(queue.arrive(0) == .write)
        for item in 1..<8 { #expect(queue.arrive(item) == .wait) }
        var groups: [[Int]] = []
        while case .write(let group) = queue.nextGroup() { groups.append(group) }
        #expect(groups == [[0, 1, 2], [3, 4, 5], [6, 7]])
        #expect(queue.waitingCount == 0 && !queue.isWriting)
    }

    @Test func withoutAWriterNothingIsHandedOut() {
        var queue = GroupQueue<Int>(maximumGroup: 2)
        guard case .idle = queue.nextGroup() else { Issue.record("a group without a writer"); return }
        #expect(queue.arrive(1) == .write)
        #expect(queue.waitingCount == 1)
    }

    /// Whatever the interleaving of arrivals and groups, every request is written exactly once,
    /// in arrival order, and exactly one writer exists while anything waits.
    @Test(arguments: 0..<50)
    func everyArrivalIsWrittenOnceInOrder(seed: UInt64) {
        var random = SplitMix(seed: seed)
        var queue = GroupQueue<Int>(maximumGroup: Int(random.next() % 5) + 1)
        var written: [Int] = [], next = 0, writers = 0
        for _ in 0..<200 {
            if random.next() % 2 == 0 {
                if queue.arrive(next) == .write { writers += 1 }
                next += 1
            } else if writers == 1 {
                switch queue.nextGroup() {
                case .write(let group): written += group
                case .idle: writers = 0
                }
            }
            #expect(writers <= 1)
            #expect(queue.waitingCount == 0 || writers == 1)
        }
        if writers == 1 { while case .write(let group) = queue.nextGroup() { written += group } }
        #expect(written == Array(0..<next))
    }
}

/// A small deterministic generator, so a failing seed can be replayed.
private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
