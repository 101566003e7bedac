-- 0031: a stream's facts without its evidence. Decisions about a user read every stream of theirs
-- but not what is kept only for the audit trail — Apple's notifications, offers signed, retention
-- answers — and a subscriber Apple asks about often gathers hundreds of those, which the read
-- fetched from the heap only to drop. Partial: evidence events are not indexed here. The list is
-- `UsersProjection.ignoredTypes`, spelt the same in the read, so the planner can use the index.
--
-- Built concurrently, outside a transaction: servers of the previous release go on appending to
-- the log while it builds. An index left invalid by a build that failed part-way is dropped first.
-- ledger: outside a transaction
-- replaces checksum f1dbc449ad3af8aa11c71d7104df9bb3335d9dffaca622f098ab57edcab1ae87
DROP INDEX CONCURRENTLY IF EXISTS ledger.events_facts_by_stream_idx;
CREATE INDEX CONCURRENTLY events_facts_by_stream_idx ON ledger.events (stream, version)
    WHERE event_type NOT IN (
        'AppAccountTokenSentToApple', 'AppleNotificationReceived', 'ConsumptionInformationSent',
        'MassRenewalExtensionRequested', 'OfferSigned', 'RenewalExtendedAtApple', 'RetentionDecided');
