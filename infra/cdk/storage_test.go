package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

func TestStorage(t *testing.T) {
	s := synthConstruct(t, func(stack awscdk.Stack, _ string) { NewStorage(stack, "Storage") })

	t.Run("table keys and billing", func(t *testing.T) {
		s.Template.HasResource(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"DeletionPolicy":      "Retain",
			"UpdateReplacePolicy": "Retain",
			"Properties": map[string]any{
				"KeySchema": []any{
					map[string]any{"AttributeName": "pk", "KeyType": "HASH"},
					map[string]any{"AttributeName": "sk", "KeyType": "RANGE"},
				},
				"BillingMode":                      "PAY_PER_REQUEST",
				"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
				"TableName":                        assertions.Match_Absent(),
			},
		})
	})

	t.Run("indexes match internal/backend/store/dynamo", func(t *testing.T) {
		table := s.only(t, "AWS::DynamoDB::Table").Props()
		// The store's doc.go: four sparse indexes sorted on g_sort,
		// projecting g_owner and g_status.
		want := map[string]string{
			"runs-all":        "g_all",
			"runs-by-status":  "g_status",
			"runs-by-session": "g_session",
			"runs-by-owner":   "g_owner",
		}
		gsis, _ := table["GlobalSecondaryIndexes"].([]any)
		if len(gsis) != len(want) {
			t.Fatalf("%d indexes, want %d: %s", len(gsis), len(want), jsonOf(gsis))
		}
		for _, g := range gsis {
			gsi := g.(map[string]any)
			name := gsi["IndexName"].(string)
			pk, ok := want[name]
			if !ok {
				t.Errorf("unexpected index %s", name)
				continue
			}
			keys := jsonOf(gsi["KeySchema"])
			wantKeys := jsonOf([]any{
				map[string]any{"AttributeName": pk, "KeyType": "HASH"},
				map[string]any{"AttributeName": "g_sort", "KeyType": "RANGE"},
			})
			if keys != wantKeys {
				t.Errorf("%s keys = %s, want %s", name, keys, wantKeys)
			}
			proj := gsi["Projection"].(map[string]any)
			if proj["ProjectionType"] != "INCLUDE" {
				t.Errorf("%s projection %v, want INCLUDE", name, proj["ProjectionType"])
			}
			// Projected: the index keys plus the non-key attributes, so
			// every index carries both g_owner and g_status.
			got := append(stringList(proj["NonKeyAttributes"]), pk, "g_sort")
			for _, a := range []string{"g_owner", "g_status"} {
				if !slices.Contains(got, a) {
					t.Errorf("%s does not project %s: %s", name, a, jsonOf(proj))
				}
			}
			if slices.Contains(stringList(proj["NonKeyAttributes"]), pk) {
				t.Errorf("%s lists its own key %s as a non-key attribute", name, pk)
			}
		}
		defs := map[string]string{}
		for _, d := range table["AttributeDefinitions"].([]any) {
			m := d.(map[string]any)
			defs[m["AttributeName"].(string)] = m["AttributeType"].(string)
		}
		for _, a := range []string{"pk", "sk", "g_all", "g_status", "g_session", "g_owner", "g_sort"} {
			if defs[a] != "S" {
				t.Errorf("attribute %s defined as %q, want S", a, defs[a])
			}
		}
		if len(defs) != 7 {
			t.Errorf("attribute definitions %v, want exactly the 7 key attributes", defs)
		}
	})

	t.Run("bucket is private, TLS only, encrypted, retained", func(t *testing.T) {
		s.Template.HasResource(jsii.String("AWS::S3::Bucket"), map[string]any{
			"DeletionPolicy":      "Retain",
			"UpdateReplacePolicy": "Retain",
			"Properties": map[string]any{
				"BucketName": assertions.Match_Absent(),
				"PublicAccessBlockConfiguration": map[string]any{
					"BlockPublicAcls":       true,
					"BlockPublicPolicy":     true,
					"IgnorePublicAcls":      true,
					"RestrictPublicBuckets": true,
				},
				"BucketEncryption": map[string]any{
					"ServerSideEncryptionConfiguration": []any{map[string]any{
						"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": "AES256"},
					}},
				},
				"VersioningConfiguration": assertions.Match_Absent(),
			},
		})
		policy := s.only(t, "AWS::S3::BucketPolicy").Props()
		doc := jsonOf(policy["PolicyDocument"])
		for _, want := range []string{
			`"Condition":{"Bool":{"aws:SecureTransport":"false"}}`,
			`"Condition":{"NumericLessThan":{"s3:TlsVersion":1.2}}`,
		} {
			if !strings.Contains(doc, want) {
				t.Errorf("bucket policy lacks %s: %s", want, doc)
			}
		}
		if !strings.Contains(doc, `"Effect":"Deny"`) || strings.Contains(doc, `"Effect":"Allow"`) {
			t.Errorf("bucket policy should only deny: %s", doc)
		}
	})
}
