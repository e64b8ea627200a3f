package dynamo

import (
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/keelrun/keel/internal/kernel/store"
)

// item is one DynamoDB item. Setters skip empty strings and payloads, so
// absent and empty read back the same.
type item map[string]types.AttributeValue

func sv(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func nv(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func bv(v []byte) types.AttributeValue  { return &types.AttributeValueMemberB{Value: v} }
func boolv(v bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: v} }

func (it item) setS(k, v string) {
	if v != "" {
		it[k] = sv(v)
	}
}

func (it item) setN(k string, v int64) { it[k] = nv(v) }

func (it item) setB(k string, v []byte) {
	if len(v) > 0 {
		it[k] = bv(v)
	}
}

// setT stores a time as 20-digit zero-padded Unix nanoseconds (S): exact,
// and ordered the same as a string and as a number.
func (it item) setT(k string, t time.Time) { it[k] = tv(t) }

func tv(t time.Time) types.AttributeValue { return sv(fmt.Sprintf("%020d", nanos(t))) }

func (it item) s(k string) string {
	if v, ok := it[k].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func (it item) n(k string) int64 {
	if v, ok := it[k].(*types.AttributeValueMemberN); ok {
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err == nil {
			return n
		}
	}
	return 0
}

// b returns nil for an absent payload.
func (it item) b(k string) []byte {
	if v, ok := it[k].(*types.AttributeValueMemberB); ok && len(v.Value) > 0 {
		return v.Value
	}
	return nil
}

func (it item) bool(k string) bool {
	v, ok := it[k].(*types.AttributeValueMemberBOOL)
	return ok && v.Value
}

func (it item) t(k string) time.Time {
	n, err := strconv.ParseInt(it.s(k), 10, 64)
	if err != nil {
		return time.Time{}
	}
	return ts(n)
}

// nanos is how times are stored: Unix nanoseconds, 0 for the zero time.
func nanos(t time.Time) int64 { return store.UnixNanos(t) }

func ts(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// Key builders; see doc.go for the layout.
func runPK(id string) string      { return "RUN#" + id }
func sessionPK(id string) string  { return "SESSION#" + id }
func eventSK(seq int64) string    { return fmt.Sprintf("EV#%020d", seq) }
func cpSK(seq int64) string       { return fmt.Sprintf("CP#%020d", seq) }
func cpIDSK(id string) string     { return "CPID#" + id }
func opSK(id string) string       { return "OP#" + id }
func approvalSK(id string) string { return "AP#" + id }
func planSK(id string) string     { return "PI#" + id }
func inputSK(id string) string    { return "IN#" + id }
func grantSK(tool string) string  { return "GRANT#" + tool }
func sortKey(created time.Time, id string) string {
	return fmt.Sprintf("%020d#%s", nanos(created), id)
}
func clientKeyPK(owner, key string) string {
	return "CKEY#" + strconv.Itoa(len(owner)) + ":" + owner + "#" + key
}

const (
	runSK     = "RUN"
	sessionSK = "SESSION"
	ckeySK    = "CKEY"
)

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": sv(pk), "sk": sv(sk)}
}

// expr collects placeholders for one expression set. Every attribute name
// goes through a #placeholder, so DynamoDB's long list of reserved words
// (status, owner, error, data, size, …) never matters.
type expr struct {
	names  map[string]string
	values map[string]types.AttributeValue
}

func newExpr() *expr {
	return &expr{names: map[string]string{}, values: map[string]types.AttributeValue{}}
}

func (e *expr) name(attr string) string {
	ph := "#" + attr
	e.names[ph] = attr
	return ph
}

func (e *expr) value(v types.AttributeValue) string {
	ph := ":v" + strconv.Itoa(len(e.values))
	e.values[ph] = v
	return ph
}

// update builds "SET a = b, …". The store never uses REMOVE: a cleared
// attribute is set to the empty string, which reads back the same as an
// absent one (and minidyn, the test server, ignores REMOVE).
type update struct {
	set []string
}

func (u *update) String() string { return "SET " + join(u.set) }

// clear sets attr to the empty string.
func (u *update) clear(e *expr, attr string) {
	u.set = append(u.set, e.name(attr)+" = "+e.value(sv("")))
}

func join(parts []string) string {
	out := ""
	for i, p := range parts {
		if i > 0 {
			out += ", "
		}
		out += p
	}
	return out
}

func and(conds []string) string {
	out := ""
	for i, c := range conds {
		if i > 0 {
			out += " AND "
		}
		out += "(" + c + ")"
	}
	return out
}
