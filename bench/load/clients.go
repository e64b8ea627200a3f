package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/client"
	"github.com/keelrun/keel/internal/kernel/run"
)

// loadHTTPClient keeps a connection per concurrent caller: with
// http.DefaultClient's two idle connections per host, the 32 creators and
// the approvers dialled a new TCP connection for most requests, and the
// dialling and accepting was CPU taken from the server under test.
func loadHTTPClient(cfg Config) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 2*cfg.Clients + 16
	t.MaxIdleConnsPerHost = t.MaxIdleConns
	return &http.Client{Transport: t}
}

// approve sweeps the runs awaiting approval and approves each one's
// pending approval, until ctx ends.
func approve(ctx context.Context, c *client.Client, workers int) error {
	done := map[string]bool{}
	for {
		var todo []string
		page := ""
		for {
			l, err := c.ListRuns(ctx, client.ListRunsOptions{Status: run.StatusAwaitingApproval, Limit: 1000, PageToken: page})
			if err != nil {
				return err
			}
			for _, r := range l.Runs {
				if !done[r.RunID] {
					todo = append(todo, r.RunID)
				}
			}
			if page = l.NextPageToken; page == "" {
				break
			}
		}
		var wg sync.WaitGroup
		errs := make(chan error, len(todo))
		work := make(chan string)
		for range min(workers, len(todo)) {
			wg.Go(func() {
				for id := range work {
					if err := approveRun(ctx, c, id); err != nil {
						errs <- err
					}
				}
			})
		}
		for _, id := range todo {
			work <- id
			done[id] = true
		}
		close(work)
		wg.Wait()
		close(errs)
		for err := range errs {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}

func approveRun(ctx context.Context, c *client.Client, id string) error {
	aps, err := c.ListApprovals(ctx, id)
	if err != nil {
		return fmt.Errorf("run %s: approvals: %w", id, err)
	}
	for _, a := range aps {
		if a.Status != run.ApprovalPending {
			continue
		}
		if _, err := c.Decide(ctx, id, a.ApprovalID, api.DecisionRequest{Decision: api.DecisionApprove, ArgsHash: a.ArgsHash}); err != nil {
			return fmt.Errorf("run %s: approve: %w", id, err)
		}
	}
	return nil
}

// waitFinished polls until n runs are in a final status, and counts them.
// While runs are active it asks only whether any is (listing every
// finished run four times a second took a tenth of the server's CPU), and
// counts the final ones once none is left.
func waitFinished(ctx context.Context, c *client.Client, n int) (map[run.Status]int, error) {
	final := []run.Status{run.StatusCompleted, run.StatusFailed, run.StatusCancelled, run.StatusNeedsHuman}
	active := []run.Status{run.StatusCreated, run.StatusPlanned, run.StatusRunning, run.StatusAwaitingApproval}
	count := func(sts []run.Status, limit int) (map[run.Status]int, int, error) {
		counts := map[run.Status]int{}
		total := 0
		for _, st := range sts {
			page := ""
			for {
				l, err := c.ListRuns(ctx, client.ListRunsOptions{Status: st, Limit: limit, PageToken: page})
				if err != nil {
					return nil, 0, err
				}
				counts[st] += len(l.Runs)
				total += len(l.Runs)
				if page = l.NextPageToken; page == "" || limit == 1 {
					break
				}
			}
		}
		return counts, total, nil
	}
	for {
		// Whether any run is active needs one run of each list, not all:
		// listing the thousand active runs four times a second was the
		// load generator's largest cost to the server under test.
		_, busy, err := count(active, 1)
		if err != nil {
			return nil, err
		}
		if busy == 0 {
			// A run may have moved between two of the lists: the final
			// count decides.
			counts, total, err := count(final, 1000)
			if err != nil {
				return nil, err
			}
			if total >= n {
				return counts, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// eventTimes returns when a run's approval was granted and when it ended.
func eventTimes(ctx context.Context, c *client.Client, id string) (granted, done time.Time, err error) {
	var after int64
	for {
		p, err := c.Events(ctx, id, after, 1000)
		if err != nil {
			return granted, done, fmt.Errorf("run %s: events: %w", id, err)
		}
		for _, ev := range p.Events {
			switch ev.Type {
			case run.EventApprovalGranted:
				granted = ev.Time
			case run.EventRunCompleted, run.EventRunFailed, run.EventRunCancelled, run.EventRunNeedsHuman:
				done = ev.Time
			}
			after = ev.Seq
		}
		if len(p.Events) < 1000 {
			return granted, done, nil
		}
	}
}
