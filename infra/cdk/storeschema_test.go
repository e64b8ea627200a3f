package main

import (
	"slices"
	"sort"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/keelrun/keel/internal/backend/store/dynamo"
)

// TestTableMatchesStore compares the synthesized table with the store's
// own CreateTable request (dynamo.TableInput, which LocalStack and the
// store tests use), so the deployed table cannot drift from what the store
// queries: same keys, attribute types, index names, index keys, and the
// same projected attributes.
func TestTableMatchesStore(t *testing.T) {
	s := synthConstruct(t, func(stack awscdk.Stack, _ string) { NewStorage(stack, "Storage") })
	table := s.only(t, "AWS::DynamoDB::Table").Props()
	want := dynamo.TableInput("keel")

	if got, w := jsonOf(table["KeySchema"]), jsonOf(keySchema(want.KeySchema)); got != w {
		t.Errorf("KeySchema = %s, store wants %s", got, w)
	}
	if table["BillingMode"] != string(want.BillingMode) {
		t.Errorf("BillingMode = %v, store wants %s", table["BillingMode"], want.BillingMode)
	}
	var wantDefs []any
	for _, d := range want.AttributeDefinitions {
		wantDefs = append(wantDefs, map[string]any{"AttributeName": aws.ToString(d.AttributeName), "AttributeType": string(d.AttributeType)})
	}
	if got, w := sortedJSON(table["AttributeDefinitions"].([]any)), sortedJSON(wantDefs); !slices.Equal(got, w) {
		t.Errorf("AttributeDefinitions = %v, store wants %v", got, w)
	}

	gsis := map[string]map[string]any{}
	for _, g := range table["GlobalSecondaryIndexes"].([]any) {
		m := g.(map[string]any)
		gsis[m["IndexName"].(string)] = m
	}
	if len(gsis) != len(want.GlobalSecondaryIndexes) {
		t.Errorf("%d indexes, store wants %d", len(gsis), len(want.GlobalSecondaryIndexes))
	}
	for _, w := range want.GlobalSecondaryIndexes {
		name := aws.ToString(w.IndexName)
		g, ok := gsis[name]
		if !ok {
			t.Errorf("no index %s", name)
			continue
		}
		if got, wk := jsonOf(g["KeySchema"]), jsonOf(keySchema(w.KeySchema)); got != wk {
			t.Errorf("%s KeySchema = %s, store wants %s", name, got, wk)
		}
		proj := g["Projection"].(map[string]any)
		if proj["ProjectionType"] != string(w.Projection.ProjectionType) {
			t.Errorf("%s projection %v, store wants %s", name, proj["ProjectionType"], w.Projection.ProjectionType)
		}
		// Keys are always projected, so compare what the index carries.
		projected := func(nonKey []string, keys []any) []string {
			set := slices.Clone(nonKey)
			for _, k := range keys {
				set = append(set, k.(map[string]any)["AttributeName"].(string))
			}
			sort.Strings(set)
			return slices.Compact(set)
		}
		got := projected(stringList(proj["NonKeyAttributes"]), g["KeySchema"].([]any))
		wp := projected(w.Projection.NonKeyAttributes, keySchema(w.KeySchema))
		if !slices.Equal(got, wp) {
			t.Errorf("%s projects %v, store wants %v", name, got, wp)
		}
	}
}

// keySchema renders an SDK key schema as the template does.
func keySchema(ks []types.KeySchemaElement) []any {
	var out []any
	for _, k := range ks {
		out = append(out, map[string]any{"AttributeName": aws.ToString(k.AttributeName), "KeyType": string(k.KeyType)})
	}
	return out
}

// sortedJSON renders each element and sorts them, for order-free equality.
func sortedJSON(l []any) []string {
	var out []string
	for _, e := range l {
		out = append(out, jsonOf(e))
	}
	sort.Strings(out)
	return out
}
