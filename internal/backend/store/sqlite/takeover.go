package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// ExpireLeases ends every lease whose owner starts with prefix but is not
// current, and returns how many it ended. It is for a single-host runtime
// (`keel dev`) that holds its data directory exclusively: leases of its own
// earlier incarnations belong to dead processes, and waiting for them to
// expire would only delay recovery. Fencing tokens are left alone, so a
// writer that was somehow still alive is fenced at its next write by the
// next lease taken.
func (s *Store) ExpireLeases(ctx context.Context, prefix, current string) (int64, error) {
	if prefix == "" || !strings.HasPrefix(current, prefix) {
		return 0, fmt.Errorf("sqlite: expire leases: current owner %q must start with prefix %q", current, prefix)
	}
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, `UPDATE runs SET lease_owner = '', lease_expiry = 0
			WHERE lease_owner <> '' AND lease_owner <> ? AND substr(lease_owner, 1, ?) = ?`, current, len(prefix), prefix)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: expire leases: %w", err)
	}
	return n, nil
}
