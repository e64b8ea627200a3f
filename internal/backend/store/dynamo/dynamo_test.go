package dynamo_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	miniserver "github.com/truora/minidyn/server"

	keels3 "github.com/keelrun/keel/internal/backend/artifact/s3"
	"github.com/keelrun/keel/internal/backend/store/dynamo"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/store/storetest"
)

// Differences between minidyn v0.8.2 (the in-process server) and DynamoDB
// as documented, noted here rather than coded around:
//   - minidyn serialises every request under one lock and applies
//     transactions with table snapshots; DynamoDB runs transactions
//     concurrently and cancels conflicting ones with TransactionConflict.
//     The store retries that reason, but only LocalStack or AWS exercise it.
//   - minidyn reports only the first failed condition of a cancelled
//     transaction (the others are "None"); DynamoDB reports every one. The
//     store puts the action whose failure decides the error first (the run
//     row, or the client key in CreateRun), so both give the same answer.
//   - minidyn's global secondary indexes are strongly consistent; on
//     DynamoDB they are eventually consistent, and ListRuns may miss a run
//     created a moment ago (documented on the package).
//   - minidyn v0.8.2 applies REMOVE in an UpdateExpression as a no-op (its
//     environment never deletes the attribute). The store does not use
//     REMOVE: a cleared attribute is set to "" (same meaning on DynamoDB).
//   - minidyn evaluates numbers in update expressions as float64, so a
//     value above 2^53 loses digits; DynamoDB keeps 38 digits. Times are
//     therefore stored as zero-padded decimal strings (exact everywhere);
//     counters stay far below 2^53.
//   - minidyn's DescribeTable reports no TableStatus; CreateTable's wait
//     treats an empty status as ready (DynamoDB always reports one).
//   - minidyn ignores ClientRequestToken (no idempotency window) and
//     enforces neither the 400 KB item nor the 4 MB transaction limit.

// endpoint is a DynamoDB (and S3) endpoint for one test binary: LocalStack
// when KEEL_E2E_LOCALSTACK=1 and AWS_ENDPOINT_URL are set, otherwise
// in-process minidyn and gofakes3 servers.
type endpoint struct {
	ddbURL, s3URL string
	hc            aws.HTTPClient
	bucket        string
	localstack    bool
}

func startEndpoint(t *testing.T) endpoint {
	t.Helper()
	if os.Getenv("KEEL_E2E_LOCALSTACK") == "1" {
		ep := os.Getenv("AWS_ENDPOINT_URL")
		if ep == "" {
			t.Skip("KEEL_E2E_LOCALSTACK=1 but AWS_ENDPOINT_URL is empty: skipping")
		}
		bucket := os.Getenv("KEEL_ARTIFACT_BUCKET")
		if bucket == "" {
			bucket = "keel-artifacts"
		}
		return endpoint{ddbURL: ep, s3URL: ep, bucket: bucket, localstack: true}
	}
	ddb := httptest.NewServer(miniserver.NewServer())
	t.Cleanup(ddb.Close)
	s3srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(s3srv.Close)
	ep := endpoint{ddbURL: ddb.URL, s3URL: s3srv.URL, hc: http.DefaultClient, bucket: "keel-test"}
	if _, err := ep.s3(nil).CreateBucket(context.Background(), &awss3.CreateBucketInput{Bucket: aws.String(ep.bucket)}); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	return ep
}

func (ep endpoint) ddb(counter *requestCounter) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(ep.ddbURL),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:   ep.hc,
		APIOptions:   counter.apiOptions(),
	})
}

func (ep endpoint) s3(counter *requestCounter) *awss3.Client {
	return awss3.New(awss3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(ep.s3URL),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:   ep.hc,
		APIOptions:   counter.apiOptions(),
	})
}

var tables atomic.Int64

// newTable creates a fresh table for one test.
func (ep endpoint) newTable(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("keel-test-%d-%d", time.Now().UnixNano()%1e9, tables.Add(1))
	if err := dynamo.CreateTable(t.Context(), ep.ddb(nil), name, 2*time.Minute); err != nil {
		t.Fatalf("create table: %v", err)
	}
	if ep.localstack {
		t.Cleanup(func() {
			_, _ = ep.ddb(nil).DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		})
	}
	return name
}

// artifacts returns an S3 artifact store under a fresh key prefix, and
// the prefix.
func (ep endpoint) artifacts(t *testing.T, counter *requestCounter) (*keels3.Store, string) {
	t.Helper()
	prefix := fmt.Sprintf("dynamo-test-%d-%d/", time.Now().UnixNano(), tables.Add(1))
	a, err := keels3.New(ep.s3(counter), keels3.Options{Bucket: ep.bucket, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return a, prefix
}

func TestConformance(t *testing.T) {
	ep := startEndpoint(t)
	client := ep.ddb(nil)
	storetest.Run(t, func(t *testing.T) storetest.Open {
		table := ep.newTable(t)
		arts, _ := ep.artifacts(t, nil)
		return func(clock func() time.Time) (store.Store, error) {
			return dynamo.New(client, dynamo.Options{Table: table, Clock: clock, Artifacts: arts})
		}
	})
}

// requestCounter counts HTTP requests per operation with a Finalize
// middleware placed after the retryer, so every attempt is counted.
type requestCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func newCounter() *requestCounter { return &requestCounter{n: map[string]int{}} }

func (c *requestCounter) apiOptions() []func(*middleware.Stack) error {
	if c == nil {
		return nil
	}
	return []func(*middleware.Stack) error{func(st *middleware.Stack) error {
		return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("keel-count-requests",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				c.mu.Lock()
				c.n[middleware.GetOperationName(ctx)]++
				c.mu.Unlock()
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	}}
}

// take returns the counts since the last take and resets them.
func (c *requestCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.n
	c.n = map[string]int{}
	return out
}
