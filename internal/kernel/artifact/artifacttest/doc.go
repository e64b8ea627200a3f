// Package artifacttest is the conformance suite every artifact.Store
// backend runs from its own tests: call Run with a function that opens a
// fresh, empty store.
//
// The suite checks the contracts stated in package artifact: Put returns
// the sha256 and size; Get verifies content and reports corruption as
// artifact.ErrCorrupt; the same content at the same key is a no-op, other
// content is artifact.ErrExists and leaves the stored blob unchanged, also
// under concurrent writers; List is per run and ordered by key; invalid
// keys are artifact.ErrInvalid; missing keys are artifact.ErrNotFound.
//
// Corruption is injected by the backend's own hook (Backend.Corrupt), which
// changes stored bytes behind the store's back, the way a bad disk or an
// out-of-band overwrite would.
package artifacttest
