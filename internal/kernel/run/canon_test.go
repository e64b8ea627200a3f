package run

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
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
		{"BigIntAsDouble", `12345678901234567`, `12345678901234568`},
		{"NoHTMLEscaping", `"<a&b>\u2028"`, "\"<a&b>\u2028\""},
		{"ControlEscapes", `"\u0001\b\u001F"`, `"\u0001\b\u001f"`},
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
	if !regexp.MustCompile(`^jcs:[0-9a-f]{64}$`).MatchString(want) {
		t.Fatalf("hash %q is not jcs: and 64 lowercase hex digits", want)
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

// TestCanonicalJSONRFC8785 runs the examples of RFC 8785 §3.2.2 and §3.2.3.
func TestCanonicalJSONRFC8785(t *testing.T) {
	for _, name := range []string{"values", "sorting"} {
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", "jcs", name+".in.json"))
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata", "jcs", name+".out.json"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := CanonicalJSON(in)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// TestFormatES6RFC8785 runs the number serialization table of RFC 8785
// Appendix B, both from the double's bits and through CanonicalJSON.
func TestFormatES6RFC8785(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "jcs", "numbers.txt"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		bitsHex, want, _ := strings.Cut(line, " ")
		bits, err := strconv.ParseUint(bitsHex, 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		f := math.Float64frombits(bits)
		if got := FormatES6(f); got != want {
			t.Errorf("%s: FormatES6(%v) = %s, want %s", bitsHex, f, got, want)
		}
		if got, err := CanonicalJSON([]byte(want)); err != nil || string(got) != want {
			t.Errorf("%s: CanonicalJSON(%s) = %s, %v", bitsHex, want, got, err)
		}
		n++
	}
	if n < 20 {
		t.Fatalf("only %d vectors read", n)
	}
}

// TestArgsHashRefusesInexactNumbers: the two collisions of issue 17 no
// longer hash alike; the numbers are refused with a message the model can
// act on.
func TestArgsHashRefusesInexactNumbers(t *testing.T) {
	refused := []string{
		`{"amount":18446744073709551615}`,
		`{"amount":18446744073709551616}`,
		`{"x":1.0000000000000000001}`,
		`{"x":[1e400]}`,
		`{"x":333333333.33333329}`,
	}
	for _, in := range refused {
		_, err := ArgsHash([]byte(in))
		var ie *InexactNumberError
		if !errors.As(err, &ie) || !errors.Is(err, ErrInexactNumber) {
			t.Fatalf("ArgsHash(%s) = %v, want an InexactNumberError", in, err)
		}
		if !strings.Contains(err.Error(), "pass it as a string") {
			t.Fatalf("error %q does not tell the caller what to do", err)
		}
	}
	accepted := map[string]string{
		`{"x":1}`:                     `{"x":1.0}`,
		`{"amount":9007199254740992}`: `{"amount":9007199254740992.0}`,
		`{"x":0.1}`:                   `{"x":1e-1}`,
		`{"x":1e21}`:                  `{"x":1000000000000000000000}`,
	}
	for a, b := range accepted {
		ha, err := ArgsHash([]byte(a))
		if err != nil {
			t.Fatalf("ArgsHash(%s): %v", a, err)
		}
		if hb, err := ArgsHash([]byte(b)); err != nil || hb != ha {
			t.Fatalf("ArgsHash(%s) = %s, %v; want %s as for %s", b, hb, err, ha, a)
		}
	}
	// The legacy form hashed both collisions alike: the new one tells them apart
	// by refusing them, and an exact neighbour hashes differently from 1.
	one, _ := ArgsHash([]byte(`{"x":1}`))
	near, err := ArgsHash([]byte(`{"x":1.0000000000000002}`))
	if err != nil || near == one {
		t.Fatalf("1.0000000000000002 hashed as 1 (%v)", err)
	}
}

// TestVerifyArgsHashLegacy: hashes stored before the version prefix still
// verify by the rule that made them.
func TestVerifyArgsHashLegacy(t *testing.T) {
	args := []byte(`{"b":1.0,"a":"x"}`)
	legacy, err := LegacyArgsHash(args)
	if err != nil {
		t.Fatal(err)
	}
	// The value the legacy form gave this document, fixed for good.
	if want := HashBytes([]byte(`{"a":"x","b":1}`)); legacy != want {
		t.Fatalf("legacy hash %s, want %s", legacy, want)
	}
	current, _ := ArgsHash(args)
	for _, h := range []string{legacy, current} {
		if err := VerifyArgsHash(args, h); err != nil {
			t.Fatalf("VerifyArgsHash(%s): %v", h, err)
		}
		if err := VerifyArgsHash([]byte(`{"a":"y","b":1}`), h); err == nil {
			t.Fatalf("VerifyArgsHash(%s) accepted other args", h)
		}
	}
	if err := VerifyArgsHash(args, "md5:abc"); err == nil {
		t.Fatal("an unknown version verified")
	}
}
