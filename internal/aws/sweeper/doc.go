// Package sweeper makes a wedged run impossible: it compares every
// unfinished run with the Step Functions executions that should be driving
// it, and repairs what it finds.
//
// A run is driven by one execution at a time, named after the run: the
// run id for generation 0, {run_id}-g{N} for generation N (Rollover starts
// N+1 before N ends, so a healthy run always has its latest generation
// RUNNING). For each run in status created, planned, running or
// awaiting_approval that has not changed for MinAge, the sweeper finds the
// latest generation (DescribeExecution of generation 0, 1, ... until one
// does not exist) and:
//
//   - latest generation RUNNING: nothing to do;
//   - no execution at all (the run was stored, and the process that was to
//     start it died): starts generation 0, named after the run — the same
//     name and input the API uses, so a start racing the API's is the same
//     execution;
//   - the latest execution ended (stopped, failed, timed out, superseded)
//     while the run is not finished: starts generation N+1, which steps the
//     run from its checkpoint. This is safe for the reasons every retry is:
//     the Step takes the run's lease (a stale worker is fenced), reconciles
//     pending operations before anything else, and a pending approval is
//     asked again with the same approval (its new task token replaces the
//     old one);
//   - after MaxResumes such resumes, the run is finalized as failed with
//     the reason instead (an execution that keeps dying would otherwise be
//     restarted forever).
//
// The run is read again after its executions were described, so a run
// that finished meanwhile is left alone, and so is a run whose lease a
// worker still holds (a Step of a stopped execution finishing its
// iteration): the next sweep looks again once the lease is released or
// expired. Every repair is a run_swept event
// in the run's log (data: found, action, execution, new_execution,
// reason), appended after the repair succeeded; a finalize is recorded
// before the run_failed it causes, so run_failed stays the log's last word.
//
// A sweep is idempotent and safe to run concurrently with itself and with
// the runtime: starting an execution by name is idempotent, and the lease
// and operation protocol keep two executions of one run from doing
// anything twice.
package sweeper
