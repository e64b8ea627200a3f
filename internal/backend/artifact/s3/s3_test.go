package s3_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	keels3 "github.com/keelrun/keel/internal/backend/artifact/s3"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/artifact/artifacttest"
)

// Differences between gofakes3 v1.2.0 and S3 as documented, noted here
// rather than coded around:
//   - gofakes3 honours If-None-Match: "*" (412 PreconditionFailed) under a
//     lock, like S3, but never returns 409 ConditionalRequestConflict, so
//     the store's retry of that code is not exercised here.
//   - gofakes3 stores every X-Amz-* request header and echoes it on reads,
//     so x-amz-checksum-sha256 comes back, but it never verifies it on
//     upload (S3 rejects a body that does not match with BadDigest).
//   - gofakes3 merges the stored headers of an overwritten object with the
//     new ones (MergeMetadata); S3 replaces them. After the corruption hook
//     overwrites an object, gofakes3 therefore still returns the original
//     ChecksumSHA256 while S3 would return the new body's checksum; either
//     way the metadata sha256 no longer matches and Get reports ErrCorrupt.
//   - gofakes3 ignores server-side encryption headers; TestSSEHeaders
//     checks what the store sends, not what the server does with it.

// server is an S3 endpoint for one test: LocalStack when
// KEEL_E2E_LOCALSTACK=1 and AWS_ENDPOINT_URL are set (its init hook
// created the bucket), otherwise an in-process gofakes3.
type server struct {
	client *awss3.Client
	bucket string
}

func newClient(endpoint string, hc aws.HTTPClient) *awss3.Client {
	return awss3.New(awss3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:   hc,
	})
}

func startServer(t *testing.T, wrap func(http.Handler) http.Handler) server {
	t.Helper()
	if os.Getenv("KEEL_E2E_LOCALSTACK") == "1" {
		ep := os.Getenv("AWS_ENDPOINT_URL")
		if ep == "" {
			t.Skip("KEEL_E2E_LOCALSTACK=1 but AWS_ENDPOINT_URL is empty: skipping")
		}
		if wrap != nil {
			t.Skip("this test inspects requests in-process; it does not run against LocalStack")
		}
		bucket := os.Getenv("KEEL_ARTIFACT_BUCKET")
		if bucket == "" {
			bucket = "keel-artifacts"
		}
		return server{client: newClient(ep, nil), bucket: bucket}
	}
	var h http.Handler = gofakes3.New(s3mem.New()).Server()
	if wrap != nil {
		h = wrap(h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	c := newClient(ts.URL, ts.Client())
	if _, err := c.CreateBucket(context.Background(), &awss3.CreateBucketInput{Bucket: aws.String("keel-test")}); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	return server{client: c, bucket: "keel-test"}
}

var prefixes atomic.Int64

// uniquePrefix gives every store its own key space, so subtests sharing a
// LocalStack bucket each start empty.
func uniquePrefix(t *testing.T) string {
	return fmt.Sprintf("test-%s-%d/", strings.ReplaceAll(t.Name(), "/", "_"), prefixes.Add(1))
}

func TestConformance(t *testing.T) {
	srv := startServer(t, nil)
	artifacttest.Run(t, func(t *testing.T) artifacttest.Backend {
		prefix := uniquePrefix(t)
		st, err := keels3.New(srv.client, keels3.Options{Bucket: srv.bucket, Prefix: prefix, ListPageSize: 7})
		if err != nil {
			t.Fatal(err)
		}
		return artifacttest.Backend{Store: st, Corrupt: func(t *testing.T, k artifact.Key) {
			corrupt(t, srv, prefix+k.Path())
		}}
	})
}

// corrupt overwrites the object's body behind the store's back (a plain
// PutObject without If-None-Match), keeping its metadata: the recorded hash
// no longer matches the content.
func corrupt(t *testing.T, srv server, key string) {
	t.Helper()
	ctx := context.Background()
	out, err := srv.client.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String(srv.bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("corrupt: get: %v", err)
	}
	var buf bytes.Buffer
	_, err = buf.ReadFrom(out.Body)
	out.Body.Close()
	if err != nil {
		t.Fatalf("corrupt: read: %v", err)
	}
	b := buf.Bytes()
	b[len(b)/2] ^= 0xff
	if _, err := srv.client.PutObject(ctx, &awss3.PutObjectInput{
		Bucket: aws.String(srv.bucket), Key: aws.String(key),
		Body: bytes.NewReader(b), Metadata: out.Metadata,
	}); err != nil {
		t.Fatalf("corrupt: put: %v", err)
	}
}

// An object someone else wrote without our metadata cannot be verified.
func TestForeignObjectIsCorrupt(t *testing.T) {
	srv := startServer(t, nil)
	prefix := uniquePrefix(t)
	st, err := keels3.New(srv.client, keels3.Options{Bucket: srv.bucket, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	k := artifact.Key{RunID: "r", CheckpointID: "c", Name: "n"}
	if _, err := srv.client.PutObject(context.Background(), &awss3.PutObjectInput{
		Bucket: aws.String(srv.bucket), Key: aws.String(prefix + k.Path()), Body: strings.NewReader("x"),
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Get(context.Background(), k); !errors.Is(err, artifact.ErrCorrupt) {
		t.Fatalf("Get = %v, want ErrCorrupt", err)
	}
}

// TestRequestHeaders checks what goes on the wire: the conditional header,
// the hash in metadata and as ChecksumSHA256, and the SSE settings.
func TestRequestHeaders(t *testing.T) {
	var (
		mu   sync.Mutex
		puts []http.Header
	)
	srv := startServer(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && strings.Count(r.URL.Path, "/") > 1 {
				mu.Lock()
				puts = append(puts, r.Header.Clone())
				mu.Unlock()
			}
			h.ServeHTTP(w, r)
		})
	})
	cases := []struct {
		name    string
		opts    keels3.Options
		wantSSE string
		wantKMS string
	}{
		{"bucket default", keels3.Options{}, "", ""},
		{"AES256", keels3.Options{SSE: types.ServerSideEncryptionAes256}, "AES256", ""},
		{"KMS key", keels3.Options{SSE: types.ServerSideEncryptionAwsKms, KMSKeyID: "alias/keel"}, "aws:kms", "alias/keel"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Bucket, c.opts.Prefix = srv.bucket, uniquePrefix(t)
			st, err := keels3.New(srv.client, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			puts = nil
			mu.Unlock()
			data := []byte("payload")
			info, err := st.Put(context.Background(), artifact.Key{RunID: "r", CheckpointID: "c", Name: "n"}, data)
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(puts) != 1 {
				t.Fatalf("saw %d PUT requests, want 1", len(puts))
			}
			h := puts[0]
			sum := sha256.Sum256(data)
			checks := map[string]string{
				"If-None-Match":                               "*",
				"X-Amz-Meta-Sha256":                           info.SHA256,
				"X-Amz-Checksum-Sha256":                       base64.StdEncoding.EncodeToString(sum[:]),
				"X-Amz-Server-Side-Encryption":                c.wantSSE,
				"X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id": c.wantKMS,
			}
			for name, want := range checks {
				if got := h.Get(name); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
		})
	}
}
