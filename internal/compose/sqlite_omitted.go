//go:build keel_lambda

package compose

import (
	"context"
	"errors"

	"github.com/keelrun/keel/internal/kernel/store"
)

// The keel_lambda build (the deployed functions and task, which keep runs
// in DynamoDB) leaves the embedded SQLite store out, and with it modernc's
// SQLite: about a quarter of the binary.

// SQLiteStore stands in for the embedded store's type, which this build
// does not have; a Runtime's SQLite field is always nil here.
type SQLiteStore struct{ store.Store }

// SQLiteOptions stands in for the embedded store's options; nothing reads
// them in this build.
type SQLiteOptions struct{}

func openSQLite(context.Context, string, SQLiteOptions) (*SQLiteStore, error) {
	return nil, errors.New("this build leaves SQLite out (-tags keel_lambda): use dynamo:TABLE, or a default build")
}
