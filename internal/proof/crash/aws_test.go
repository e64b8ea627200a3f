package crash

import (
	"context"
	"errors"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/keelrun/keel/internal/kernel/run"
)

// TestLocalAWS drives the in-process endpoint with the real SDK clients: a
// scenario's world is created (Keel's table, a bucket), used through both
// services on the one URL, read through the store, and dropped.
func TestLocalAWS(t *testing.T) {
	ctx := context.Background()
	a, err := StartLocalAWS()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	table, bucket, err := a.newWorld(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.s3.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("runs/x/a"),
		Body: strings.NewReader("blob")}); err != nil {
		t.Fatalf("S3 on the shared endpoint: %v", err)
	}
	st, err := a.store(table)
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := st.CreateRun(ctx, run.Run{ID: run.NewID("run"), SessionID: "s", Owner: "o", Agent: "research", Request: "r",
		InputPolicy: run.InputQueue, Limits: run.Limits{MaxSteps: 1, MaxTokens: 1, MaxSpendMicroUSD: 1, MaxToolCalls: 1}})
	if err != nil {
		t.Fatalf("DynamoDB on the shared endpoint: %v", err)
	}
	if ops, err := st.ListOperations(ctx, r.ID, false); err != nil || len(ops) != 0 {
		t.Fatalf("ListOperations = %v, %v", ops, err)
	}

	// DynamoDB's responses carry the CRC32 of their body, as AWS's do.
	req, _ := http.NewRequest(http.MethodPost, a.URL, strings.NewReader(`{"TableName":"`+table+`"}`))
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.DescribeTable")
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got, want := resp.Header.Get("X-Amz-Crc32"), strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10); got != want {
		t.Errorf("X-Amz-Crc32 = %q, want %q", got, want)
	}

	if err := a.dropWorld(ctx, table, bucket); err != nil {
		t.Fatal(err)
	}
	_, err = a.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Errorf("DescribeTable after drop: %v, want ResourceNotFoundException", err)
	}
	if _, err := a.s3.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: aws.String(bucket)}); err == nil {
		t.Error("the bucket is still there after drop")
	}
	if _, err := st.GetRun(ctx, r.ID); err == nil {
		t.Error("GetRun on a dropped table succeeded")
	}
}
