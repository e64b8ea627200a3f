package devserver

import (
	"context"
	"time"

	"github.com/keelrun/keel/internal/notify"
)

// startNotify starts the notification worker of keel dev: it delivers the
// outbox every interval until stop, which waits for it.
func startNotify(w *notify.Worker, interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx, interval)
	}()
	return func() { cancel(); <-done }
}
