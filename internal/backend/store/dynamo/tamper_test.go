package dynamo_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/keelrun/keel/internal/backend/store/dynamo"
	"github.com/keelrun/keel/internal/kernel/store"
	"github.com/keelrun/keel/internal/kernel/store/storetest"
)

// tableTamperer edits event items with plain DynamoDB calls, as someone
// with write access to the table would.
type tableTamperer struct {
	c     *dynamodb.Client
	table string
}

func eventKey(runID string, seq int64) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "RUN#" + runID},
		"sk": &types.AttributeValueMemberS{Value: fmt.Sprintf("EV#%020d", seq)},
	}
}

func (tt tableTamperer) get(ctx context.Context, runID string, seq int64) (map[string]types.AttributeValue, error) {
	out, err := tt.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tt.table), Key: eventKey(runID, seq), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	if len(out.Item) == 0 {
		return nil, fmt.Errorf("no event %d", seq)
	}
	return out.Item, nil
}

func (tt tableTamperer) put(ctx context.Context, it map[string]types.AttributeValue) error {
	_, err := tt.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tt.table), Item: it})
	return err
}

func (tt tableTamperer) EditEventData(ctx context.Context, runID string, seq int64, data []byte) error {
	it, err := tt.get(ctx, runID, seq)
	if err != nil {
		return err
	}
	it["data"] = &types.AttributeValueMemberB{Value: data}
	return tt.put(ctx, it)
}

func (tt tableTamperer) DeleteEvent(ctx context.Context, runID string, seq int64) error {
	_, err := tt.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tt.table), Key: eventKey(runID, seq)})
	return err
}

func (tt tableTamperer) SwapEvents(ctx context.Context, runID string, a, b int64) error {
	ia, err := tt.get(ctx, runID, a)
	if err != nil {
		return err
	}
	ib, err := tt.get(ctx, runID, b)
	if err != nil {
		return err
	}
	move := func(it map[string]types.AttributeValue, seq int64) map[string]types.AttributeValue {
		for k, v := range eventKey(runID, seq) {
			it[k] = v
		}
		it["seq"] = &types.AttributeValueMemberN{Value: fmt.Sprint(seq)}
		return it
	}
	if err := tt.put(ctx, move(ia, b)); err != nil {
		return err
	}
	return tt.put(ctx, move(ib, a))
}

func TestTamperDetected(t *testing.T) {
	ep := startEndpoint(t)
	client := ep.ddb(nil)
	storetest.RunTamper(t, func(t *testing.T) (storetest.Open, storetest.Tamperer) {
		table := ep.newTable(t)
		arts, _ := ep.artifacts(t, nil)
		return func(clock func() time.Time) (store.Store, error) {
			return dynamo.New(client, dynamo.Options{Table: table, Clock: clock, Artifacts: arts})
		}, tableTamperer{c: client, table: table}
	})
}
