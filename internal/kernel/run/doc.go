// Package run holds Keel's durable records: the run (one accepted turn), its
// plan items, its event log, the operations that touch the outside world,
// approvals and grants, and checkpoints. It performs no I/O.
//
// Each record answers a different question after a crash, so they stay
// separate: the run says what was asked and where it stands; plan items say
// what the agent intends to do, with the exact arguments; events say what the
// runtime tried and learned, in a gapless sequence; operations say which
// external effects may have happened; approvals say what a person allowed,
// down to the hash of the arguments; checkpoints say where to resume.
//
// Run statuses move only along the table in [transitions]; [Transition]
// refuses anything else, so no backend or handler can put a run into a state
// the harness does not expect.
package run
