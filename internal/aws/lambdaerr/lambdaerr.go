package lambdaerr

import (
	"reflect"

	"github.com/aws/aws-lambda-go/lambda/messages"
)

// Type is the errorType aws-lambda-go reports for a handler's error or a
// panic value v: a messages.InvokeResponse_Error's own Type, otherwise the
// name of v's type with one pointer removed (*harness.RetryableError →
// "RetryableError", errors.New → "errorString", fmt.Errorf → "wrapError").
// It does not look at ErrorType() methods nor at wrapped errors:
// aws-lambda-go does neither. A type without a name (a pointer to a
// pointer, an anonymous struct) is "", as on AWS.
func Type(v any) string {
	if ive, ok := v.(messages.InvokeResponse_Error); ok {
		return ive.Type
	}
	t := reflect.TypeOf(v)
	if t == nil {
		return ""
	}
	if t.Kind() == reflect.Pointer {
		return t.Elem().Name()
	}
	return t.Name()
}
