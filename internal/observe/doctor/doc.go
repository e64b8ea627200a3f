// Package doctor answers the article's ten production questions about a
// Keel deployment — which store owns the records, what a crash mid-tool
// does per tool, whether runs can touch each other's workspace, which
// actions need approval, whether credentials reach the model, which calls
// are safe to retry, where cost is limited, what evidence decides done,
// where results live, whether a failed run can be explained — from the
// [Facts] the running deployment reports about its own composition
// (GET /v1/deployment), each answer with the facts it rests on. An answer
// that would be "the prompt says so" (or "nothing stops it") is a gap.
package doctor
