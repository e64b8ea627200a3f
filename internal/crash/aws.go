package crash

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	miniserver "github.com/truora/minidyn/server"

	"github.com/keelrun/keel/internal/store/dynamo"
)

// On DynamoDB a restarted keel dev does not end the leases of the one that
// died (the table may be shared with live workers), so they run out their
// TTL: the step's budget plus the lease TTL. The suite gives keel dev short
// ones, so a run is stepped again a few seconds after a crash instead of
// the default 90.
const (
	dynamoStepBudget = 2 * time.Second
	dynamoLeaseTTL   = time.Second
)

// AWS is the DynamoDB and S3 endpoint of the dynamo scenarios. It outlives
// every keel process the suite kills: it is served by the suite's own
// process (StartLocalAWS) or by the caller (ExternalAWS, e.g. LocalStack).
// Each scenario gets a table and a bucket of its own on it.
type AWS struct {
	// URL is the endpoint the keel processes get as AWS_ENDPOINT_URL.
	URL   string
	env   []string
	ddb   *dynamodb.Client
	s3    *awss3.Client
	close func()
}

// StartLocalAWS serves DynamoDB (in-process minidyn) and S3 (in-process
// gofakes3) on one loopback URL, routed by request shape the way
// LocalStack's single port is: DynamoDB's JSON protocol names its
// operation in X-Amz-Target, everything else is S3. Close stops it.
func StartLocalAWS() (*AWS, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rt := &awsRouter{ddb: miniserver.NewServer(), s3: gofakes3.New(s3mem.New()).Server()}
	srv := &http.Server{Handler: rt, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	url := "http://" + ln.Addr().String()
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")}
	a := newAWS(cfg, url)
	// The keel processes get the same static credentials, so nothing
	// of the caller's AWS configuration (profiles, instance metadata)
	// is looked up or used.
	a.env = append(a.env, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_SESSION_TOKEN=",
		"AWS_REGION=us-east-1", "AWS_PROFILE=", "AWS_EC2_METADATA_DISABLED=true")
	a.close = func() { _ = srv.Close() }
	return a, nil
}

// ExternalAWS uses an endpoint the caller runs (LocalStack, or any
// DynamoDB- and S3-compatible server at one URL). cfg reaches it (its
// BaseEndpoint is endpoint); the keel processes inherit the caller's AWS_*
// environment, with AWS_ENDPOINT_URL set to endpoint.
func ExternalAWS(cfg aws.Config, endpoint string) *AWS {
	a := newAWS(cfg, endpoint)
	a.env = append(a.env, awsEnvDefaults()...)
	return a
}

func newAWS(cfg aws.Config, endpoint string) *AWS {
	return &AWS{
		URL: endpoint,
		env: []string{"AWS_ENDPOINT_URL=" + endpoint},
		ddb: dynamodb.NewFromConfig(cfg),
		s3:  awss3.NewFromConfig(cfg, func(o *awss3.Options) { o.UsePathStyle = true }),
	}
}

// Close stops the in-process endpoint (nothing for an external one).
func (a *AWS) Close() {
	if a != nil && a.close != nil {
		a.close()
	}
}

// newWorld creates a table (Keel's shape, dynamo.CreateTable) and a bucket
// for one scenario.
func (a *AWS) newWorld(ctx context.Context) (table, bucket string, err error) {
	name := "keel-crash-" + randHex(6)
	if err := dynamo.CreateTable(ctx, a.ddb, name, 2*time.Minute); err != nil {
		return "", "", err
	}
	if _, err := a.s3.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		return "", "", fmt.Errorf("create bucket %s: %w", name, err)
	}
	return name, name, nil
}

// dropWorld deletes a passed scenario's table and bucket (best effort: a
// leftover costs memory or a little LocalStack state, not correctness).
func (a *AWS) dropWorld(ctx context.Context, table, bucket string) error {
	_, err := a.ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	p := awss3.NewListObjectsV2Paginator(a.s3, &awss3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, perr := p.NextPage(ctx)
		if perr != nil {
			return errors.Join(err, perr)
		}
		var ids []s3types.ObjectIdentifier
		for _, o := range page.Contents {
			ids = append(ids, s3types.ObjectIdentifier{Key: o.Key})
		}
		if len(ids) > 0 {
			_, derr := a.s3.DeleteObjects(ctx, &awss3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &s3types.Delete{Objects: ids}})
			err = errors.Join(err, derr)
		}
	}
	_, berr := a.s3.DeleteBucket(ctx, &awss3.DeleteBucketInput{Bucket: aws.String(bucket)})
	return errors.Join(err, berr)
}

// store opens Keel's DynamoDB store on a scenario's table, for reading
// the records the API does not show.
func (a *AWS) store(table string) (*dynamo.Store, error) {
	return dynamo.New(a.ddb, dynamo.Options{Table: table})
}

// awsRouter is the single endpoint. It also adds the X-Amz-Crc32 header
// DynamoDB puts on every response and minidyn does not: the SDK checks the
// body against it when present, and logs a checksum mismatch against 0
// when it is missing.
//
// It serves one DynamoDB request at a time: minidyn's server reads its
// table map outside its lock (getTable) while CreateTable and DeleteTable
// write it, a data race once scenarios create tables while others run
// (the race detector reports it). minidyn holds one global lock for
// nearly every operation anyway, so this costs no concurrency.
type awsRouter struct {
	ddb, s3 http.Handler
	ddbMu   sync.Mutex
}

func (rt *awsRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.") {
		rt.s3.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	rt.ddbMu.Lock()
	rt.ddb.ServeHTTP(rec, r)
	rt.ddbMu.Unlock()
	body := rec.Body.Bytes()
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(rec.Code)
	_, _ = bytes.NewReader(body).WriteTo(w)
}

// awsEnvDefaults are the settings an external endpoint needs that the
// caller may not have set (LocalStack accepts any credentials).
func awsEnvDefaults() []string {
	var env []string
	for _, kv := range [][2]string{{"AWS_REGION", "us-east-1"}, {"AWS_ACCESS_KEY_ID", "test"}, {"AWS_SECRET_ACCESS_KEY", "test"}} {
		if os.Getenv(kv[0]) == "" {
			env = append(env, kv[0]+"="+kv[1])
		}
	}
	return env
}
