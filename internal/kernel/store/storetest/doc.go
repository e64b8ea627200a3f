// Package storetest is the conformance suite every store.Store backend
// runs: the SQLite default and the DynamoDB backend pass the same
// assertions, so the harness can rely on one set of guarantees.
//
// A backend's test calls [Run] with an [Opener] that makes a fresh, empty
// database per subtest. The suite opens it through the returned [Open],
// possibly several times (to close and reopen it, or to hold two stores on
// it at once), always with an injected clock: lease expiry is tested by
// advancing a [Clock], never by sleeping.
//
// The suite depends only on package store and package run.
package storetest
