// Command ticketd serves the triage example's ticket service (package
// tickets) with its sample data, in memory, until interrupted:
//
//	TRIAGE_TICKETS_TOKEN=dev-token go run ./cmd/ticketd -addr 127.0.0.1:8181
//
// It takes the same TRIAGE_TICKETS_TOKEN the triage program sends.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/keelrun/keel/examples/triage/tickets"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8181", "address to listen on")
	broken := flag.Bool("break-idempotency", false, "apply every update request, ignoring Idempotency-Key (a destination that breaks its promise: keel crashtest must catch it)")
	flag.Parse()
	if err := run(*addr, os.Getenv("TRIAGE_TICKETS_TOKEN"), *broken); err != nil {
		fmt.Fprintln(os.Stderr, "ticketd:", err)
		os.Exit(2)
	}
}

func run(addr, token string, broken bool) error {
	if token == "" {
		return errors.New("TRIAGE_TICKETS_TOKEN is not set: the token clients must send")
	}
	srv, err := tickets.NewServer(token, tickets.SampleData())
	if err != nil {
		return err
	}
	if broken {
		srv.BreakIdempotency()
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(shut)
	}()
	slog.Info("ticketd: serving", "url", "http://"+ln.Addr().String())
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	slog.Info("ticketd: stopped", "updates_applied", len(srv.Applied()))
	return nil
}
