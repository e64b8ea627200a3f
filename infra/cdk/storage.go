package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Storage is Keel's durable state: the single table every record lives in
// and the bucket for artifacts, large checkpoints and debug bundles. Both
// are retained when the stack is deleted: losing them loses runs.
type Storage struct {
	constructs.Construct
	Table  awsdynamodb.Table
	Bucket awss3.Bucket
}

// The table's key and index layout, exactly as internal/backend/store/dynamo
// expects it (see its doc.go and TableInput): keys pk/sk, and four sparse
// run-listing indexes sorted on g_sort.
const (
	tablePartitionKey = "pk"
	tableSortKey      = "sk"
	indexSortKey      = "g_sort"
)

// runIndex is one run-listing index: its name and partition key.
type runIndex struct{ Name, PartitionKey string }

// runIndexes are the run-listing indexes of internal/backend/store/dynamo.
func runIndexes() []runIndex {
	return []runIndex{
		{"runs-all", "g_all"},
		{"runs-by-status", "g_status"},
		{"runs-by-session", "g_session"},
		{"runs-by-owner", "g_owner"},
	}
}

// indexProjected are the non-key attributes each index carries so a
// combined owner+status query can filter without reading the rows.
func indexProjected() []string { return []string{"g_owner", "g_status"} }

// NewStorage creates the table and the artifact bucket.
func NewStorage(scope constructs.Construct, id string) *Storage {
	c := constructs.NewConstruct(scope, jsii.String(id))

	table := awsdynamodb.NewTable(c, jsii.String("Table"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String(tablePartitionKey), Type: awsdynamodb.AttributeType_STRING},
		SortKey:      &awsdynamodb.Attribute{Name: jsii.String(tableSortKey), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	for _, ix := range runIndexes() {
		table.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
			IndexName:        jsii.String(ix.Name),
			PartitionKey:     &awsdynamodb.Attribute{Name: jsii.String(ix.PartitionKey), Type: awsdynamodb.AttributeType_STRING},
			SortKey:          &awsdynamodb.Attribute{Name: jsii.String(indexSortKey), Type: awsdynamodb.AttributeType_STRING},
			ProjectionType:   awsdynamodb.ProjectionType_INCLUDE,
			NonKeyAttributes: jsii.Strings(nonKeyAttributes(ix.PartitionKey)...),
		})
	}

	bucket := awss3.NewBucket(c, jsii.String("Artifacts"), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		MinimumTLSVersion: jsii.Number(1.2),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		// Artifacts are content-addressed and immutable (written once with
		// If-None-Match), so versions would only duplicate them.
		Versioned:     jsii.Bool(false),
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:                                  jsii.String("abort-incomplete-uploads"),
			AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(7)),
		}},
	})

	return &Storage{Construct: c, Table: table, Bucket: bucket}
}

// nonKeyAttributes is indexProjected minus the index's own partition key,
// which every index projects anyway: the projection is the same as the
// store's CreateTable request, without naming a key attribute twice.
func nonKeyAttributes(partitionKey string) []string {
	var out []string
	for _, a := range indexProjected() {
		if a != partitionKey {
			out = append(out, a)
		}
	}
	return out
}
