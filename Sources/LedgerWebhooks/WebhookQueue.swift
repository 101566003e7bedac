import LedgerChanges

/// Each webhook's queue of users with changes to deliver, told of new changes by the change
/// projection in the very statement that writes them, so that a change announced is a change
/// queued: every webhook of the app learns the user has more up to the batch's last position,
/// and a webhook created meanwhile starts after the position it was created at.
package enum WebhookQueue {
    package static let follower = ChangeFollower { inserted in
        """
        INSERT INTO ledger.webhook_queue AS q (bundle_id, webhook, user_id, delivered, wanted)
        SELECT w.bundle_id, w.name, i.user_id, w.starts_after, max(i.position)
          FROM \(inserted) i JOIN ledger.webhooks w ON w.bundle_id = i.bundle_id
         GROUP BY w.bundle_id, w.name, i.user_id, w.starts_after
        ON CONFLICT (bundle_id, webhook, user_id) DO UPDATE SET wanted = greatest(q.wanted, EXCLUDED.wanted)
        """
    }
}
