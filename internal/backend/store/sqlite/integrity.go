package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/kernel/store"
)

var _ store.IntegrityChecker = (*Store)(nil)

// maxIntegrityErrors bounds the problems CheckIntegrity reports.
const maxIntegrityErrors = 5

// CheckIntegrity runs PRAGMA quick_check on the database: every page and
// record well formed, every index entry where its table says (it does
// not compare index contents with their tables, which integrity_check
// does at several times the cost). It reads the whole file once, about
// as long as copying it. A damaged database is an error wrapping
// store.ErrCorrupt that quotes SQLite's first findings; SQLite failing to
// read the file at all ("malformed") is one too.
func (s *Store) CheckIntegrity(ctx context.Context) error {
	rows, err := s.r.QueryContext(ctx, fmt.Sprintf("PRAGMA quick_check(%d)", maxIntegrityErrors))
	if err != nil {
		return corruptOr(err)
	}
	defer rows.Close()
	var found []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return corruptOr(err)
		}
		if line != "ok" {
			found = append(found, line)
		}
	}
	if err := rows.Err(); err != nil {
		return corruptOr(err)
	}
	if len(found) > 0 {
		return fmt.Errorf("sqlite: %w: quick_check: %s", store.ErrCorrupt, strings.Join(found, "; "))
	}
	return nil
}

// corruptOr is err as ErrCorrupt when SQLite says the file is damaged
// (SQLITE_CORRUPT, SQLITE_NOTADB), else err.
func corruptOr(err error) error {
	msg := err.Error()
	if strings.Contains(msg, "malformed") || strings.Contains(msg, "not a database") || strings.Contains(msg, "SQLITE_CORRUPT") {
		return fmt.Errorf("sqlite: %w: %w", store.ErrCorrupt, err)
	}
	return fmt.Errorf("sqlite: integrity check: %w", err)
}
