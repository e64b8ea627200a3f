// Command pubserver runs the research fixture's publication service: an
// external destination in a process of its own that records every effect it
// receives (to an fsync'd JSON-lines log), honours Idempotency-Key and
// answers lookups by operation id — or, with -no-lookup -no-idempotency,
// promises neither. The demo and the crash suite start it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/keelrun/keel/internal/fixture"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "pubserver:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	logPath := flag.String("log", "", "append-only JSON-lines log of every publication (required)")
	urlFile := flag.String("url-file", "", "write the server's URL to this file once listening")
	noLookup := flag.Bool("no-lookup", false, "answer 404 to every lookup")
	noIdem := flag.Bool("no-idempotency", false, "ignore Idempotency-Key: every POST is a new publication")
	hang := flag.Bool("hang", false, "record POSTs but never answer them")
	flag.Parse()
	if *logPath == "" {
		return errors.New("-log is required")
	}
	srv, err := fixture.NewPublicationServer(fixture.ServerOptions{Log: *logPath, NoLookup: *noLookup, NoIdempotency: *noIdem, Hang: *hang})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String()
	if *urlFile != "" {
		if err := os.WriteFile(*urlFile+".tmp", []byte(url), 0o644); err != nil {
			return err
		}
		if err := os.Rename(*urlFile+".tmp", *urlFile); err != nil {
			return err
		}
	}
	fmt.Println(url)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
