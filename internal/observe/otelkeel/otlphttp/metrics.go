package otlphttp

import (
	"fmt"
	"math"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/protobuf/encoding/protowire"
)

// AppendMetrics appends an ExportMetricsServiceRequest of rm. An
// aggregation or temporality it does not know is an error, and nothing
// is appended.
func AppendMetrics(b []byte, rm *metricdata.ResourceMetrics) ([]byte, error) {
	var err error
	out := appendMessage(b, 1, func(m []byte) []byte { // resource_metrics
		m = appendMessage(m, 1, func(r []byte) []byte { return appendIter(r, 1, rm.Resource.Iter()) })
		for _, sm := range rm.ScopeMetrics {
			m = appendMessage(m, 2, func(s []byte) []byte { // scope_metrics
				s = appendMessage(s, 1, func(x []byte) []byte { return appendScope(x, sm.Scope) })
				for _, mt := range sm.Metrics {
					var merr error
					s = appendMessage(s, 2, func(x []byte) []byte {
						x, merr = appendMetric(x, mt)
						return x
					})
					if merr != nil && err == nil {
						err = fmt.Errorf("metric %q: %w", mt.Name, merr)
					}
				}
				return appendString(s, 3, sm.Scope.SchemaURL)
			})
		}
		return appendString(m, 3, rm.Resource.SchemaURL())
	})
	if err != nil {
		return b, err
	}
	return out, nil
}

func temporality(t metricdata.Temporality) (uint64, error) {
	switch t {
	case metricdata.DeltaTemporality:
		return 1, nil
	case metricdata.CumulativeTemporality:
		return 2, nil
	}
	return 0, fmt.Errorf("unknown temporality %v", t)
}

func appendMetric(b []byte, m metricdata.Metrics) ([]byte, error) {
	b = appendString(b, 1, m.Name)
	b = appendString(b, 2, m.Description)
	b = appendString(b, 3, m.Unit)
	switch a := m.Data.(type) {
	case metricdata.Gauge[int64]:
		return appendMessage(b, 5, func(x []byte) []byte { return appendNumberPoints(x, a.DataPoints) }), nil
	case metricdata.Gauge[float64]:
		return appendMessage(b, 5, func(x []byte) []byte { return appendNumberPoints(x, a.DataPoints) }), nil
	case metricdata.Sum[int64]:
		return appendSum(b, a)
	case metricdata.Sum[float64]:
		return appendSum(b, a)
	case metricdata.Histogram[int64]:
		return appendHistogram(b, a)
	case metricdata.Histogram[float64]:
		return appendHistogram(b, a)
	case metricdata.ExponentialHistogram[int64]:
		return appendExpHistogram(b, a)
	case metricdata.ExponentialHistogram[float64]:
		return appendExpHistogram(b, a)
	case metricdata.Summary:
		return appendMessage(b, 11, func(x []byte) []byte { return appendSummaryPoints(x, a.DataPoints) }), nil
	}
	return b, fmt.Errorf("unknown aggregation %T", m.Data)
}

func appendSum[N int64 | float64](b []byte, s metricdata.Sum[N]) ([]byte, error) {
	t, err := temporality(s.Temporality)
	if err != nil {
		return b, err
	}
	return appendMessage(b, 7, func(x []byte) []byte {
		x = appendNumberPoints(x, s.DataPoints)
		x = appendUvarint(x, 2, t)
		if s.IsMonotonic {
			x = appendUvarint(x, 3, 1)
		}
		return x
	}), nil
}

// appendValue writes a NumberDataPoint's or Exemplar's value oneof: as_int
// or as_double at the field numbers given.
func appendValue[N int64 | float64](b []byte, asDouble, asInt protowire.Number, v N) []byte {
	switch v := any(v).(type) {
	case int64:
		b = protowire.AppendTag(b, asInt, protowire.Fixed64Type)
		return protowire.AppendFixed64(b, uint64(v))
	case float64:
		return appendDouble(b, asDouble, v)
	}
	return b
}

// NumberDataPoint: attributes 7, start 2, time 3, as_double 4, exemplars
// 5, as_int 6.
func appendNumberPoints[N int64 | float64](b []byte, pts []metricdata.DataPoint[N]) []byte {
	for _, p := range pts {
		b = appendMessage(b, 1, func(x []byte) []byte {
			x = appendFixed64(x, 2, unixNano(p.StartTime))
			x = appendFixed64(x, 3, unixNano(p.Time))
			x = appendValue(x, 4, 6, p.Value)
			x = appendExemplars(x, 5, p.Exemplars)
			return appendIter(x, 7, p.Attributes.Iter())
		})
	}
	return b
}

// Exemplar: time 2, as_double 3, span_id 4, trace_id 5, as_int 6,
// filtered_attributes 7.
func appendExemplars[N int64 | float64](b []byte, n protowire.Number, es []metricdata.Exemplar[N]) []byte {
	for _, e := range es {
		b = appendMessage(b, n, func(x []byte) []byte {
			x = appendFixed64(x, 2, unixNano(e.Time))
			x = appendValue(x, 3, 6, e.Value)
			x = appendBytes(x, 4, e.SpanID)
			x = appendBytes(x, 5, e.TraceID)
			return appendKeyValues(x, 7, e.FilteredAttributes)
		})
	}
	return b
}

func appendHistogram[N int64 | float64](b []byte, h metricdata.Histogram[N]) ([]byte, error) {
	t, err := temporality(h.Temporality)
	if err != nil {
		return b, err
	}
	return appendMessage(b, 9, func(x []byte) []byte {
		for _, p := range h.DataPoints {
			x = appendMessage(x, 1, func(d []byte) []byte {
				// HistogramDataPoint: start 2, time 3, count 4, sum 5,
				// bucket_counts 6, explicit_bounds 7, exemplars 8,
				// attributes 9, min 11, max 12.
				d = appendFixed64(d, 2, unixNano(p.StartTime))
				d = appendFixed64(d, 3, unixNano(p.Time))
				d = appendFixed64(d, 4, p.Count)
				d = appendDouble(d, 5, float64(p.Sum))
				d = appendPackedFixed64(d, 6, p.BucketCounts)
				d = appendPackedFixed64(d, 7, float64Bits(p.Bounds))
				d = appendExemplars(d, 8, p.Exemplars)
				d = appendIter(d, 9, p.Attributes.Iter())
				if v, ok := p.Min.Value(); ok {
					d = appendDouble(d, 11, float64(v))
				}
				if v, ok := p.Max.Value(); ok {
					d = appendDouble(d, 12, float64(v))
				}
				return d
			})
		}
		return appendUvarint(x, 2, t)
	}), nil
}

func appendExpHistogram[N int64 | float64](b []byte, h metricdata.ExponentialHistogram[N]) ([]byte, error) {
	t, err := temporality(h.Temporality)
	if err != nil {
		return b, err
	}
	buckets := func(d []byte, n protowire.Number, bk metricdata.ExponentialBucket) []byte {
		return appendMessage(d, n, func(x []byte) []byte {
			if bk.Offset != 0 {
				x = protowire.AppendTag(x, 1, protowire.VarintType)
				x = protowire.AppendVarint(x, protowire.EncodeZigZag(int64(bk.Offset)))
			}
			if len(bk.Counts) > 0 {
				var packed []byte
				for _, c := range bk.Counts {
					packed = protowire.AppendVarint(packed, c)
				}
				x = appendBytes(x, 2, packed)
			}
			return x
		})
	}
	return appendMessage(b, 10, func(x []byte) []byte {
		for _, p := range h.DataPoints {
			x = appendMessage(x, 1, func(d []byte) []byte {
				// ExponentialHistogramDataPoint: attributes 1, start 2,
				// time 3, count 4, sum 5, scale 6 (sint32), zero_count 7,
				// positive 8, negative 9, exemplars 11, min 12, max 13.
				d = appendIter(d, 1, p.Attributes.Iter())
				d = appendFixed64(d, 2, unixNano(p.StartTime))
				d = appendFixed64(d, 3, unixNano(p.Time))
				d = appendFixed64(d, 4, p.Count)
				d = appendDouble(d, 5, float64(p.Sum))
				if p.Scale != 0 {
					d = protowire.AppendTag(d, 6, protowire.VarintType)
					d = protowire.AppendVarint(d, protowire.EncodeZigZag(int64(p.Scale)))
				}
				d = appendFixed64(d, 7, p.ZeroCount)
				d = buckets(d, 8, p.PositiveBucket)
				d = buckets(d, 9, p.NegativeBucket)
				d = appendExemplars(d, 11, p.Exemplars)
				if v, ok := p.Min.Value(); ok {
					d = appendDouble(d, 12, float64(v))
				}
				if v, ok := p.Max.Value(); ok {
					d = appendDouble(d, 13, float64(v))
				}
				return d
			})
		}
		return appendUvarint(x, 2, t)
	}), nil
}

// SummaryDataPoint: start 2, time 3, count 4, sum 5, quantile_values 6,
// attributes 7; ValueAtQuantile: quantile 1, value 2.
func appendSummaryPoints(b []byte, pts []metricdata.SummaryDataPoint) []byte {
	for _, p := range pts {
		b = appendMessage(b, 1, func(x []byte) []byte {
			x = appendFixed64(x, 2, unixNano(p.StartTime))
			x = appendFixed64(x, 3, unixNano(p.Time))
			x = appendFixed64(x, 4, p.Count)
			x = appendFixed64(x, 5, math.Float64bits(p.Sum))
			for _, q := range p.QuantileValues {
				x = appendMessage(x, 6, func(v []byte) []byte {
					v = appendFixed64(v, 1, math.Float64bits(q.Quantile))
					return appendFixed64(v, 2, math.Float64bits(q.Value))
				})
			}
			return appendIter(x, 7, p.Attributes.Iter())
		})
	}
	return b
}

func float64Bits(vs []float64) []uint64 {
	out := make([]uint64, len(vs))
	for i, v := range vs {
		out[i] = math.Float64bits(v)
	}
	return out
}
