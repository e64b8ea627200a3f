package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TableAdmin is what CreateTable needs.
type TableAdmin interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

var _ TableAdmin = (*dynamodb.Client)(nil)

// TableInput is the CreateTable request for Keel's table: on-demand
// billing, keys pk/sk, and the four run-listing indexes (see doc.go). The
// CDK stack and the LocalStack init hook create the same shape.
func TableInput(name string) *dynamodb.CreateTableInput {
	str := func(n string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeTypeS}
	}
	gsi := func(index, pk string) types.GlobalSecondaryIndex {
		return types.GlobalSecondaryIndex{
			IndexName: aws.String(index),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("g_sort"), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{
				ProjectionType:   types.ProjectionTypeInclude,
				NonKeyAttributes: []string{"g_owner", "g_status"},
			},
		}
	}
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			str("pk"), str("sk"), str("g_all"), str("g_status"), str("g_session"), str("g_owner"), str("g_sort"),
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			gsi(indexAll, "g_all"), gsi(indexStatus, "g_status"), gsi(indexSession, "g_session"), gsi(indexOwner, "g_owner"),
		},
	}
}

// CreateTable creates Keel's table if it does not exist and waits (up to
// maxWait) until it and its indexes are active. It is idempotent: an
// existing table is left as it is.
func CreateTable(ctx context.Context, c TableAdmin, name string, maxWait time.Duration) error {
	_, err := c.CreateTable(ctx, TableInput(name))
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("dynamo: create table %s: %w", name, err)
	}
	deadline := time.Now().Add(maxWait)
	for delay := 50 * time.Millisecond; ; delay = min(delay*2, 2*time.Second) {
		out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		// An empty status (servers that do not report one, such as minidyn)
		// counts as ready: DynamoDB always reports it.
		if err == nil && out.Table != nil && (out.Table.TableStatus == types.TableStatusActive || out.Table.TableStatus == "") &&
			indexesActive(out.Table) {
			return nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = errors.New("not active yet")
			}
			return fmt.Errorf("dynamo: table %s: %w", name, err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func indexesActive(t *types.TableDescription) bool {
	for _, g := range t.GlobalSecondaryIndexes {
		if g.IndexStatus != "" && g.IndexStatus != types.IndexStatusActive {
			return false
		}
	}
	return true
}
