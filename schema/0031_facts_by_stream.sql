-- 0031: a stream's facts without its evidence. Decisions about a user read every stream of theirs
-- but not what is kept only for the audit trail — Apple's notifications, offers signed, retention
-- answers — and a subscriber Apple asks about often gathers hundreds of those, which the read
-- fetched from the heap only to drop. Partial: evidence events are not indexed here. The list is
-- `UsersProjection.ignoredTypes`, spelt the same in the read, so the planner can use the index.
CREATE INDEX events_facts_by_stream_idx ON ledger.events (stream, version)
    WHERE event_type NOT IN (
        'AppAccountTokenSentToApple', 'AppleNotificationReceived', 'ConsumptionInformationSent',
        'MassRenewalExtensionRequested', 'OfferSigned', 'RenewalExtendedAtApple', 'RetentionDecided');
