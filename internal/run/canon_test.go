package run

import (
	"errors"
	"regexp"
	"testing"
)

func TestCanonicalJSON(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"SortsKeys", `{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{"Nested", `{"z":{"y":[{"b":1,"a":2}],"x":null}}`, `{"z":{"x":null,"y":[{"a":2,"b":1}]}}`},
		{"Whitespace", " {\n\t\"a\" : [ 1 , 2 ] \r\n} ", `{"a":[1,2]}`},
		{"IntegerForms", `[1, 1.0, 1e0, 10E-1, -0, 100e-2]`, `[1,1,1,1,0,1]`},
		{"Fractions", `[0.5, 5e-1, 1.25, 1e21]`, `[0.5,0.5,1.25,1e+21]`},
		{"BigIntExact", `12345678901234567`, `12345678901234567`},
		{"Strings", `"caf\u00e9 \"q\""`, `"café \"q\""`},
		{"Literals", `[true,false,null]`, `[true,false,null]`},
		{"EmptyThings", `{"a":{},"b":[],"c":""}`, `{"a":{},"b":[],"c":""}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CanonicalJSON([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("CanonicalJSON(%s) = %s, want %s", tc.in, got, tc.want)
			}
			again, err := CanonicalJSON(got)
			if err != nil || string(again) != string(got) {
				t.Fatalf("not idempotent: %s → %s (%v)", got, again, err)
			}
		})
	}
}

func TestCanonicalJSONInvalid(t *testing.T) {
	cases := []struct{ name, in string }{
		{"Empty", ``},
		{"Truncated", `{"a":`},
		{"Trailing", `{"a":1} {"b":2}`},
		{"TrailingGarbage", `[1] x`},
		{"BareWord", `hello`},
		{"SingleQuotes", `{'a':1}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := CanonicalJSON([]byte(tc.in)); err == nil {
				t.Fatalf("CanonicalJSON(%q) accepted invalid JSON", tc.in)
			}
			if _, err := ArgsHash([]byte(tc.in)); err == nil {
				t.Fatalf("ArgsHash(%q) accepted invalid JSON", tc.in)
			}
		})
	}
}

func TestArgsHash(t *testing.T) {
	base := `{"url":"https://a.example","depth":1,"tags":["x","y"]}`
	same := []struct{ name, in string }{
		{"KeyOrder", `{"tags":["x","y"],"depth":1,"url":"https://a.example"}`},
		{"Whitespace", "{ \"url\" : \"https://a.example\",\n \"depth\" : 1 , \"tags\" : [\"x\", \"y\"] }"},
		{"NumberForm", `{"url":"https://a.example","depth":1.0,"tags":["x","y"]}`},
		{"Exponent", `{"url":"https://a.example","depth":1e0,"tags":["x","y"]}`},
		{"EscapedSlash", `{"url":"https:\/\/a.example","depth":1,"tags":["x","y"]}`},
	}
	differ := []struct{ name, in string }{
		{"OtherValue", `{"url":"https://b.example","depth":1,"tags":["x","y"]}`},
		{"OtherNumber", `{"url":"https://a.example","depth":2,"tags":["x","y"]}`},
		{"NumberVsString", `{"url":"https://a.example","depth":"1","tags":["x","y"]}`},
		{"ArrayOrder", `{"url":"https://a.example","depth":1,"tags":["y","x"]}`},
		{"ExtraKey", `{"url":"https://a.example","depth":1,"tags":["x","y"],"dry":false}`},
		{"MissingKey", `{"url":"https://a.example","depth":1}`},
		{"NullVsMissing", `{"url":"https://a.example","depth":1,"tags":null}`},
	}
	want, err := ArgsHash([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(want) {
		t.Fatalf("hash %q is not 64 lowercase hex digits", want)
	}
	for _, tc := range same {
		t.Run("Same/"+tc.name, func(t *testing.T) {
			got, err := ArgsHash([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("hash differs for an equivalent document: %s vs %s", got, want)
			}
		})
	}
	for _, tc := range differ {
		t.Run("Differ/"+tc.name, func(t *testing.T) {
			got, err := ArgsHash([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if got == want {
				t.Fatal("different arguments gave the same hash")
			}
		})
	}
}

func TestHashBytes(t *testing.T) {
	// sha256("") is a published constant.
	if got := HashBytes(nil); got != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("HashBytes(nil) = %s", got)
	}
	if HashBytes([]byte("a")) == HashBytes([]byte("b")) {
		t.Fatal("different bytes, same hash")
	}
}

func TestCanonicalJSONErrorIsWrapped(t *testing.T) {
	_, err := CanonicalJSON([]byte(`{`))
	if err == nil || errors.Unwrap(err) == nil {
		t.Fatalf("error %v does not wrap its cause", err)
	}
}
