package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/keelrun/keel/internal/kernel/run"
	"github.com/keelrun/keel/internal/kernel/store"
)

// RunSignals implements store.Signals: one strongly consistent GetItem of
// the run row, projected to the three attributes a step checks.
func (s *Store) RunSignals(ctx context.Context, runID string) (store.RunSignals, error) {
	if err := store.ValidateID("run id", runID); err != nil {
		return store.RunSignals{}, err
	}
	out, err := s.c.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(s.table),
		Key:                      key(runPK(runID), runSK),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#c, #t, #s"),
		ExpressionAttributeNames: map[string]string{"#c": "cancel", "#t": "lease_token", "#s": "status"},
	})
	if err != nil {
		return store.RunSignals{}, fmt.Errorf("dynamo: run signals %q: %w", runID, err)
	}
	if len(out.Item) == 0 {
		return store.RunSignals{}, fmt.Errorf("dynamo: run %q: %w", runID, store.ErrNotFound)
	}
	it := item(out.Item)
	return store.RunSignals{CancelRequested: it.bool("cancel"), LeaseToken: it.n("lease_token"), Status: run.Status(it.s("status"))}, nil
}
