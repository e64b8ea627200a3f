// Package notify delivers the notification outbox (store.Outbox) to
// people: a signed webhook, a Slack incoming webhook, e-mail over SMTP.
//
// The rules it keeps:
//
//   - At least once. A [Worker] claims an attempt in the store (attempts+1,
//     the next attempt moved past this one's end) before it sends, and
//     records the outcome after. A worker killed between the two leaves the
//     notification due again; a receiver deduplicates by the delivery id
//     (the notification id, the same on every attempt).
//   - Retries with exponential backoff, up to MaxAttempts; then the
//     notification is failed, a notification_failed event goes into the
//     run's log, and nothing else changes: an approval whose message never
//     arrived stays pending. Delivery never decides anything (fail closed).
//   - A channel that took a message is not sent it again by a retry
//     (Notification.Delivered).
//   - Secrets (the HMAC key, the Slack URL, the SMTP password, the link
//     key) live in the channels and the worker, never in records, events,
//     errors or logs.
//   - An approval link's token is derived from the link key, the
//     notification, the approval id and its args hash ([LinkToken]): every
//     retry sends the same link, and the store keeps only its SHA-256. The
//     link page also checks it under the current key ([LinkCurrent]), so
//     rotating the key revokes the links sent under the old one.
//   - What a message carries from a run passes through the deployment's
//     secret masking (Options.Secrets) before any channel sees it, and is
//     rendered so that it cannot pass for Keel's own words: control and
//     bidi characters escaped, Slack code blocks that cannot be closed.
//   - A post never follows a redirect: the signed body, link included,
//     goes only to the configured URL.
package notify
