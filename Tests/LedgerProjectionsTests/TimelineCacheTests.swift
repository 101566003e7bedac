import Foundation
import LedgerCore
import Testing

@testable import LedgerProjections

/// The cache stays true when its own worker fills it: other processes' announcements invalidate,
/// its own echo does not, and what the worker computed is kept only if nobody invalidated while
/// the batch ran.
@Suite struct TimelineCacheTests {
    let app = "com.example.app"

    @Test func theWorkersTimelinesAreKeptAndItsOwnEchoIsIgnored() {
        let cache = TimelineCache()
        let epoch = cache.epoch
        cache.replace([(app, "alice", UserTimeline(userID: "alice"))], ifUnchangedSince: epoch)
        #expect(cache.timeline(bundleID: app, userID: "alice")?.userID == "alice")

        cache.apply(payload: TimelineCache.payload([(app, "alice")], origin: cache.origin))
        #expect(cache.timeline(bundleID: app, userID: "alice") != nil, "this process's own batch, announced back to it")

        cache.apply(payload: TimelineCache.payload([(app, "alice")], origin: UUID().uuidString))
        #expect(cache.timeline(bundleID: app, userID: "alice") == nil, "another process's batch changed alice")
    }

    @Test func anInvalidationDuringTheBatchWinsOverWhatItComputed() {
        let cache = TimelineCache()
        let epoch = cache.epoch
        cache.apply(payload: TimelineCache.payload([(app, "bob")], origin: UUID().uuidString)) // while the batch ran
        cache.replace([(app, "alice", UserTimeline(userID: "alice"))], ifUnchangedSince: epoch)
        #expect(cache.timeline(bundleID: app, userID: "alice") == nil, "another process may have written alice after this batch")
    }

    @Test func aReadThatBeganBeforeTheWorkersReplaceDoesNotStoreOverIt() {
        let cache = TimelineCache()
        let readBegan = cache.epoch
        cache.replace([(app, "alice", UserTimeline(userID: "alice", periods: []))], ifUnchangedSince: cache.epoch)
        cache.store(UserTimeline(userID: "stale"), bundleID: app, userID: "alice", readSince: readBegan)
        #expect(cache.timeline(bundleID: app, userID: "alice")?.userID == "alice")
    }

    @Test func everyoneIsForgottenByAnotherProcessesStarButNotByOurs() {
        let cache = TimelineCache()
        cache.replace([(app, "alice", UserTimeline(userID: "alice"))], ifUnchangedSince: cache.epoch)
        cache.apply(payload: TimelineCache.payload([], origin: cache.origin) + "*")
        #expect(cache.timeline(bundleID: app, userID: "alice") != nil)
        cache.apply(payload: "*") // a rebuild's switch
        #expect(cache.timeline(bundleID: app, userID: "alice") == nil)
    }
}
