package awslocal

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	keels3 "github.com/keelrun/keel/internal/backend/artifact/s3"
	"github.com/keelrun/keel/internal/backend/store/dynamo"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/store/storetest"
)

// motoOnly starts moto alone (no Lambda emulator, no template) for a
// test of the AWS APIs the backends use; it skips as the other
// aws-local-e2e tests do.
func motoOnly(t *testing.T) *Moto {
	t.Helper()
	if os.Getenv("KEEL_AWSLOCAL") == "" {
		t.Skip("aws-local-e2e: SKIPPED: set KEEL_AWSLOCAL=1 (make aws-local-e2e sets it)")
	}
	python := envOr("KEEL_AWSLOCAL_PYTHON", "python3")
	if why := MotoAvailable(python); why != "" {
		t.Skip("aws-local-e2e: SKIPPED: " + why)
	}
	m, err := StartMoto(context.Background(), python, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// TestStoreConformanceOnMoto runs the store conformance suite on the
// DynamoDB store against moto, beside the in-process server
// internal/backend/store/dynamo's own tests use. moto keeps what that
// server does not: a global secondary index holds only its projected
// attributes, so a query or filter that reads another one finds nothing
// (ListRuns by parent did, until this suite ran here). The launcher
// serializes requests, as moto's DynamoDB needs (no per-item atomicity
// under concurrent writes).
func TestStoreConformanceOnMoto(t *testing.T) {
	ctx := context.Background()
	m := motoOnly(t)
	creds := credentials.NewStaticCredentialsProvider("test", "test", "")
	ddb := dynamodb.New(dynamodb.Options{Region: Region, BaseEndpoint: aws.String(m.URL), Credentials: creds})
	s3c := awss3.New(awss3.Options{Region: Region, BaseEndpoint: aws.String(m.URL), UsePathStyle: true, Credentials: creds})
	const bucket = "keel-conformance"
	if _, err := s3c.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T) storetest.Open {
		i := n.Add(1)
		table := fmt.Sprintf("keel-conformance-%d", i)
		if err := dynamo.CreateTable(t.Context(), ddb, table, 2*time.Minute); err != nil {
			t.Fatalf("create table: %v", err)
		}
		arts, err := keels3.New(s3c, keels3.Options{Bucket: bucket, Prefix: fmt.Sprintf("t%d/", i)})
		if err != nil {
			t.Fatal(err)
		}
		return func(clock func() time.Time) (store.Store, error) {
			return dynamo.New(ddb, dynamo.Options{Table: table, Clock: clock, Artifacts: arts})
		}
	})
}
