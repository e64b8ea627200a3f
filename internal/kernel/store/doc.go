// Package store declares what Keel's harness and API need from durable
// storage, split by consumer, and the sentinel errors every backend returns.
//
// Every method is designed to map to at most one DynamoDB write request
// (TransactWriteItems: at most 100 items, 4 MB, no two actions on one item;
// an item at most 400 KB), so the embedded SQLite backend and the DynamoDB
// backend give the same guarantees. Reads may page.
//
// Contracts common to all methods:
//   - When a method returns nil, what it wrote is durable (fsync'd or
//     acknowledged by DynamoDB).
//   - When it returns an error, nothing it was asked to write was written,
//     unless the doc of the method says otherwise.
//   - Errors are wrapped sentinels: test them with errors.Is.
//
// Input is checked before anything is read or written, by the Validate
// functions of this package (validate.go), which every backend calls: so
// every backend refuses the same input with ErrInvalid and a message that
// names the field, and fills in the same derived fields (args hashes,
// idempotency keys, checkpoint hashes). A backend adds only the checks of
// its own limits (DynamoDB's transaction size, its page token format).
//
// Writes made by the harness during a step carry the fencing token obtained
// from AcquireLease. A write whose token is not the run's current token gets
// ErrFenced and writes nothing: a stale worker stops there.
package store
