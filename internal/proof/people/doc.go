// Package people holds end-to-end tests of the people in the loop on a
// real `keel dev` process: a run paused at its spend cap by many
// concurrent priced tool calls, raised through the one-time link its
// notification carried, and completed. Its program is
// testdata/budgetagent.
package people
