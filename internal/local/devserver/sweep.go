package devserver

import (
	"context"
	"log/slog"
	"time"

	"github.com/keelrun/keel/internal/aws/roles"
	"github.com/keelrun/keel/internal/aws/sweeper"
	"github.com/keelrun/keel/internal/compose"
)

// startSweeper sweeps once now, then every SweepInterval until Close.
// Its repairs include a decision whose wake was lost (the process that
// recorded it died before it woke the wait): the sweep at start delivers
// it.
func (s *Server) startSweeper(ctx context.Context, cfg Config, rt *compose.Runtime, x sweeper.Executions, fin sweeper.Finalizer, log *slog.Logger) {
	// The sweeper: once now — on SQLite nothing else can be starting a
	// run of this store (the data directory is held), so it need not wait
	// for runs to age — then every SweepInterval.
	s.sweeper = rt.Sweeper(x, fin, roles.Resumer{Tokens: s.exec})
	first := *s.sweeper
	if rt.SQLite != nil {
		first.MinAge = 0
	}
	if _, err := first.Sweep(ctx); err != nil {
		log.Warn("sweep at start failed", "err", err)
	}
	interval := cfg.SweepInterval
	if interval <= 0 {
		interval = rt.Config.SweepInterval
	}
	if interval <= 0 {
		interval = 5 * time.Minute
	}
	swpCtx, stop := context.WithCancel(context.Background())
	s.stopSwp, s.swept = stop, make(chan struct{})
	go func() {
		defer close(s.swept)
		for {
			select {
			case <-swpCtx.Done():
				return
			case <-time.After(interval):
			}
			if _, err := s.sweeper.Sweep(swpCtx); err != nil && swpCtx.Err() == nil {
				log.Warn("sweep failed", "err", err)
			}
		}
	}()
}
