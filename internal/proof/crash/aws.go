package crash

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/keelrun/keel/internal/backend/store/dynamo"
)

// On DynamoDB a restarted keel dev does not end the leases of the one that
// died (the table may be shared with live workers), so they run out their
// TTL: the step's budget plus the lease TTL. Lease "short" (the dynamo
// default) gives keel dev short ones, so a run is stepped again a few
// seconds after a crash instead of the default 90.
const (
	shortStepBudget = 2 * time.Second
	shortLeaseTTL   = time.Second
)

// keel dev's own defaults (internal/config: KEEL_STEP_BUDGET 60s,
// KEEL_LEASE_TTL 30s), which Lease "default" leaves in force.
const (
	keelStepBudget = 60 * time.Second
	keelLeaseTTL   = 30 * time.Second
)

// leaseWait is how long a killed keel dev's lease can keep its run from
// being stepped again: nothing where a restart ends it (SQLite), its step
// budget and TTL on DynamoDB.
func (c Config) leaseWait() time.Duration {
	switch {
	case c.Store != "dynamo":
		return 0
	case c.Lease == "default":
		return keelStepBudget + keelLeaseTTL
	}
	return shortStepBudget + shortLeaseTTL
}

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

// LocalAWS uses an endpoint served by the caller's own process
// (internal/proof/crash/localaws: in-process DynamoDB and S3 on one URL; close
// stops it). The keel processes get static test credentials, so nothing of
// the caller's AWS configuration (profiles, instance metadata) is looked up
// or used.
func LocalAWS(url string, close func()) *AWS {
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")}
	a := newAWS(cfg, url)
	a.env = append(a.env, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_SESSION_TOKEN=",
		"AWS_REGION=us-east-1", "AWS_PROFILE=", "AWS_EC2_METADATA_DISABLED=true")
	a.close = close
	return a
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
