package dynamo_test

import (
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/keelrun/keel/internal/backend/store/dynamo"
)

// The LocalStack init hook creates the table with awslocal; it must name
// the same attributes and indexes as TableInput, or `keel dev --store
// dynamo` against LocalStack would query indexes that do not exist.
func TestLocalStackInitMatchesTableInput(t *testing.T) {
	b, err := os.ReadFile("../../../../localstack/init/ready.d/10-keel.sh")
	if err != nil {
		t.Fatal(err)
	}
	script := string(b)
	in := dynamo.TableInput("keel")
	var want []string
	for _, a := range in.AttributeDefinitions {
		want = append(want, "AttributeName="+aws.ToString(a.AttributeName)+",AttributeType="+string(a.AttributeType))
	}
	for _, g := range in.GlobalSecondaryIndexes {
		want = append(want, "gsi "+aws.ToString(g.IndexName)+" "+aws.ToString(g.KeySchema[0].AttributeName))
		for _, a := range g.Projection.NonKeyAttributes {
			want = append(want, `"`+a+`"`)
		}
	}
	for _, w := range want {
		if !strings.Contains(script, w) {
			t.Errorf("localstack init script lacks %q", w)
		}
	}
}
