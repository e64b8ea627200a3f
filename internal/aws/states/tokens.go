package states

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

func (s *Store) token(ctx context.Context, token string) (tokenRow, error) {
	var t tokenRow
	var hb int64
	err := s.rd.QueryRowContext(ctx, qToken, token).
		Scan(&t.Token, &t.ExecutionARN, &t.State, &t.Status, &t.Output, &t.Error, &t.Cause, &hb)
	if errors.Is(err, sql.ErrNoRows) {
		return t, errNoRow
	}
	t.Heartbeat = time.UnixMilli(hb).UTC()
	return t, err
}

// completeToken moves a waiting token to a final status. It returns the
// token's status before the call (so the caller can tell "already closed"
// from "unknown").
func (s *Store) completeToken(ctx context.Context, token, status string, output, errName, cause *string) (string, string, error) {
	var prev, arn string
	err := s.tx(ctx, func(c conn) error {
		err := c.QueryRowContext(ctx, qTokenStatus, token).Scan(&prev, &arn)
		if errors.Is(err, sql.ErrNoRows) {
			return errNoRow
		}
		if err != nil || prev != tokWaiting {
			return err
		}
		_, err = c.ExecContext(ctx, qTokenComplete, status, output, errName, cause, token)
		return err
	})
	return prev, arn, err
}

// timeoutToken marks a waiting token timed out, unless a heartbeat moved
// its heartbeat time since the caller read it.
func (s *Store) timeoutToken(ctx context.Context, token string, seenHeartbeat time.Time, errName string) error {
	return s.tx(ctx, func(c conn) error {
		_, err := c.ExecContext(ctx, `UPDATE sfn_tokens SET status = ?, error = ? WHERE token = ? AND status = ? AND heartbeat_ms = ?`,
			tokTimedOut, errName, token, tokWaiting, seenHeartbeat.UnixMilli())
		return err
	})
}

// heartbeat records a heartbeat on a waiting token; it returns the
// token's status and execution.
func (s *Store) heartbeat(ctx context.Context, token string, now time.Time) (string, string, error) {
	var status, arn string
	err := s.tx(ctx, func(c conn) error {
		err := c.QueryRowContext(ctx, qTokenStatus, token).Scan(&status, &arn)
		if errors.Is(err, sql.ErrNoRows) {
			return errNoRow
		}
		if err != nil || status != tokWaiting {
			return err
		}
		_, err = c.ExecContext(ctx, `UPDATE sfn_tokens SET heartbeat_ms = ? WHERE token = ?`, now.UnixMilli(), token)
		return err
	})
	return status, arn, err
}
