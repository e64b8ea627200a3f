package otlphttp

import (
	"math"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"google.golang.org/protobuf/encoding/protowire"
)

// Appenders of proto3 fields. A scalar equal to its zero value is left
// out, as proto3 does; a field with presence (a oneof member, an optional
// scalar, a sub-message) is written whenever the caller calls for it.

func appendString(b []byte, n protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, n, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendBytes(b []byte, n protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = protowire.AppendTag(b, n, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func appendUvarint(b []byte, n protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, n, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendFixed64(b []byte, n protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, n, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, v)
}

func appendFixed32(b []byte, n protowire.Number, v uint32) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, n, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, v)
}

// appendDouble writes a double with presence (oneof, optional).
func appendDouble(b []byte, n protowire.Number, v float64) []byte {
	b = protowire.AppendTag(b, n, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, math.Float64bits(v))
}

// appendMessage writes a present sub-message whose body f appends.
func appendMessage(b []byte, n protowire.Number, f func([]byte) []byte) []byte {
	body := f(nil)
	b = protowire.AppendTag(b, n, protowire.BytesType)
	return protowire.AppendBytes(b, body)
}

// appendPackedFixed64 writes a packed repeated fixed64 (or, with bits,
// double) field.
func appendPackedFixed64(b []byte, n protowire.Number, vs []uint64) []byte {
	if len(vs) == 0 {
		return b
	}
	b = protowire.AppendTag(b, n, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(8*len(vs)))
	for _, v := range vs {
		b = protowire.AppendFixed64(b, v)
	}
	return b
}

func unixNano(t time.Time) uint64 { return uint64(max(0, t.UnixNano())) }

func clampUint32(v int) uint64 { return uint64(min(max(v, 0), math.MaxUint32)) }

// opentelemetry.proto.common.v1: KeyValue, AnyValue, InstrumentationScope.

func appendKeyValues(b []byte, n protowire.Number, kvs []attribute.KeyValue) []byte {
	for _, kv := range kvs {
		b = appendMessage(b, n, func(m []byte) []byte { return appendKeyValue(m, kv) })
	}
	return b
}

func appendIter(b []byte, n protowire.Number, it attribute.Iterator) []byte {
	for it.Next() {
		kv := it.Attribute()
		b = appendMessage(b, n, func(m []byte) []byte { return appendKeyValue(m, kv) })
	}
	return b
}

func appendKeyValue(b []byte, kv attribute.KeyValue) []byte {
	b = appendString(b, 1, string(kv.Key))
	return appendMessage(b, 2, func(m []byte) []byte { return appendAnyValue(m, kv.Value) })
}

// appendAnyValue writes AnyValue's oneof as the official exporters map an
// attribute value: slices as an ArrayValue, a map as a KeyValueList, an
// empty value as an empty AnyValue.
func appendAnyValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.STRING:
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		return protowire.AppendString(b, v.AsString())
	case attribute.BOOL:
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		return protowire.AppendVarint(b, protowire.EncodeBool(v.AsBool()))
	case attribute.INT64:
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		return protowire.AppendVarint(b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		return appendDouble(b, 4, v.AsFloat64())
	case attribute.BYTESLICE:
		b = protowire.AppendTag(b, 7, protowire.BytesType)
		return protowire.AppendBytes(b, v.AsByteSlice())
	case attribute.MAP:
		return appendMessage(b, 6, func(m []byte) []byte { return appendKeyValues(m, 1, v.AsMap()) })
	case attribute.EMPTY:
		return b
	}
	var elems []attribute.Value
	switch v.Type() {
	case attribute.BOOLSLICE:
		for _, e := range v.AsBoolSlice() {
			elems = append(elems, attribute.BoolValue(e))
		}
	case attribute.INT64SLICE:
		for _, e := range v.AsInt64Slice() {
			elems = append(elems, attribute.Int64Value(e))
		}
	case attribute.FLOAT64SLICE:
		for _, e := range v.AsFloat64Slice() {
			elems = append(elems, attribute.Float64Value(e))
		}
	case attribute.STRINGSLICE:
		for _, e := range v.AsStringSlice() {
			elems = append(elems, attribute.StringValue(e))
		}
	case attribute.SLICE:
		elems = v.AsSlice()
	default:
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		return protowire.AppendString(b, "INVALID")
	}
	return appendMessage(b, 5, func(m []byte) []byte {
		for _, e := range elems {
			m = appendMessage(m, 1, func(x []byte) []byte { return appendAnyValue(x, e) })
		}
		return m
	})
}

func appendScope(b []byte, s instrumentation.Scope) []byte {
	b = appendString(b, 1, s.Name)
	b = appendString(b, 2, s.Version)
	return appendIter(b, 3, s.Attributes.Iter())
}
