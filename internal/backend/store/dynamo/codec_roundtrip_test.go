package dynamo

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/kernel/run"
)

// fill sets every exported field of the struct v points to (recursively)
// to a value of its own, distinct from its zero value and from every other
// field's: a codec that forgets a field then fails the round trip.
func fill(v reflect.Value, name string, n *int64) {
	*n++
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Unix(1_700_000_000+*n, *n*1000).UTC()))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), name+"."+v.Type().Field(i).Name, n)
			}
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("%s-%d", name, *n))
	case reflect.Int64, reflect.Int:
		v.SetInt(*n)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		if v.Type() == reflect.TypeOf(json.RawMessage(nil)) || v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte(fmt.Sprintf(`{"field":%q}`, name)))
			return
		}
		panic("fill: no rule for " + name + " " + v.Type().String())
	default:
		panic("fill: no rule for " + name + " " + v.Type().String())
	}
}

func filled[T any](t *testing.T) T {
	t.Helper()
	var x T
	var n int64
	fill(reflect.ValueOf(&x).Elem(), reflect.TypeOf(x).Name(), &n)
	return x
}

// TestCodecRoundTripsEveryField: each record encoded to its item and
// decoded back equals itself with every field filled, so a field added to
// a record but not to this codec fails here instead of being dropped in
// production. Fields the codec derives rather than stores are set to what
// it derives before comparing, each named below.
func TestCodecRoundTripsEveryField(t *testing.T) {
	const runID = "run_codec"
	cases := []struct {
		name string
		run  func(t *testing.T) (want, got any)
	}{
		{"Run", func(t *testing.T) (any, any) {
			r := filled[run.Run](t)
			r.Status = run.StatusRunning // the index attribute g_status must be a real status too
			return r, itemToRun(runItem(r))
		}},
		{"Operation", func(t *testing.T) (any, any) {
			op := filled[run.Operation](t)
			op.RunID = runID // the partition key, not an attribute
			return op, itemToOp(runID, opItem(runID, op, 1))
		}},
		{"Approval", func(t *testing.T) (any, any) {
			a := filled[run.Approval](t)
			a.RunID = runID
			return a, itemToApproval(runID, approvalItem(runID, a, 1))
		}},
		{"PlanItem", func(t *testing.T) (any, any) {
			pi := filled[run.PlanItem](t)
			pi.RunID = runID
			return pi, itemToPlanItem(runID, planItemItem(runID, pi))
		}},
		{"Input", func(t *testing.T) (any, any) {
			in := filled[run.Input](t)
			in.RunID = runID
			return in, itemToInput(runID, inputItem(in, 1))
		}},
		{"Checkpoint", func(t *testing.T) (any, any) {
			cp := filled[run.Checkpoint](t)
			cp.RunID = runID
			got, err := (&Store{}).itemToCheckpoint(context.Background(), runID, checkpointItem(runID, cp, nil))
			if err != nil {
				t.Fatal(err)
			}
			return cp, got
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, got := tc.run(t)
			if !reflect.DeepEqual(want, got) {
				w, _ := json.MarshalIndent(want, "", " ")
				g, _ := json.MarshalIndent(got, "", " ")
				t.Fatalf("round trip lost a field:\nwant %s\ngot  %s", w, g)
			}
		})
	}
}
