// Package agent is the triage agent: it reads a support ticket and the
// open tickets like it, reads the customer's private profile (a person
// allows that once per session), then answers the customer and sets the
// ticket's status (a person approves the exact update) through the ticket
// service.
//
// The update is an effect under Keel's operation protocol. The ticket
// service takes an idempotency key but cannot be asked whether a key was
// applied, so the effect declares keel.IdempotentByKey and no Lookup: when
// an update's outcome is unknown (a crash right after sending it, a lost
// answer), Keel sends it again with the same operation id, and the service
// applies it once.
//
// The service's token reaches the tools through [Config] (a client built
// in main), never through a tool's arguments, so it is in no event, no
// checkpoint and nothing the model sees.
package agent
