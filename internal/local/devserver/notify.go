package devserver

import (
	"context"

	"github.com/keelrun/keel/internal/compose"
)

// startNotify starts the notification worker of keel dev: it delivers the
// outbox every Config.Notify.Interval until stop, which waits for it.
func startNotify(rt *compose.Runtime, baseURL string) (stop func(), err error) {
	w, err := rt.NotifyWorker(baseURL)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx, rt.Config.Notify.Interval)
	}()
	return func() { cancel(); <-done }, nil
}
