package devserver

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// sfnAccessKey is the access key keel dev's task signs with; its secret is
// the dev token (awsbackend.LocalSFN).
const sfnAccessKey = "keel-dev"

// maxSkew bounds how far a signature's X-Amz-Date may be from now (AWS
// allows 15 minutes; a local child has no excuse for more than a few).
const maxSkew = 5 * time.Minute

// maxSignedBody bounds a request body read to check its signature; the
// local Step Functions API never takes more (states: 2 × 256 KiB).
const maxSignedBody = 1 << 20

// requireSigV4 serves next only requests that carry a valid AWS Signature
// Version 4 by the access key sfnAccessKey with secret as its secret key:
// the signature is recomputed over the received method, path, query,
// signed headers and body, and compared in constant time; X-Amz-Date must
// be within maxSkew of now. Anything else gets the 403 the real service
// answers (UnrecognizedClientException or InvalidSignatureException) and
// never reaches next.
func requireSigV4(secret string, now func() time.Time, next http.Handler) http.Handler {
	signer := v4.NewSigner()
	creds := aws.Credentials{AccessKeyID: sfnAccessKey, SecretAccessKey: secret}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxSignedBody+1))
		if err != nil || len(body) > maxSignedBody {
			sfnDeny(w, "SerializationException", "the request body cannot be read or is too large")
			return
		}
		if code, msg := verifySigV4(r, body, signer, creds, now()); code != "" {
			sfnDeny(w, code, msg)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// verifySigV4 returns the error code and message of a refusal, or "" when
// r's signature is valid.
func verifySigV4(r *http.Request, body []byte, signer *v4.Signer, creds aws.Credentials, now time.Time) (code, msg string) {
	auth := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return "MissingAuthenticationTokenException", "the request must be signed with AWS Signature Version 4"
	}
	var credential, signedHeaders string
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			credential = v
		case "SignedHeaders":
			signedHeaders = v
		}
	}
	// Credential=AKID/DATE/REGION/SERVICE/aws4_request
	scope := strings.Split(credential, "/")
	if len(scope) != 5 || scope[4] != "aws4_request" || signedHeaders == "" {
		return "IncompleteSignatureException", "malformed Authorization header"
	}
	if scope[0] != sfnAccessKey {
		return "UnrecognizedClientException", "unknown access key"
	}
	date, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return "IncompleteSignatureException", "missing or malformed X-Amz-Date"
	}
	if d := now.Sub(date); d > maxSkew || d < -maxSkew {
		return "InvalidSignatureException", "signature expired: X-Amz-Date is too far from the server's time"
	}
	// Rebuild the request from exactly the headers it says it signed, and
	// sign it again: the signer adds host, content-length and X-Amz-Date
	// itself.
	u := *r.URL
	u.Scheme, u.Host = "http", r.Host
	re, err := http.NewRequest(r.Method, u.String(), nil)
	if err != nil {
		return "IncompleteSignatureException", "malformed request"
	}
	re.Host = r.Host
	re.ContentLength = int64(len(body))
	for _, h := range strings.Split(signedHeaders, ";") {
		switch h {
		case "host", "content-length", "x-amz-date":
			continue
		}
		vs, ok := r.Header[http.CanonicalHeaderKey(h)]
		if !ok {
			return "IncompleteSignatureException", "a signed header is missing: " + h
		}
		re.Header[http.CanonicalHeaderKey(h)] = vs
	}
	sum := sha256.Sum256(body)
	if err := signer.SignHTTP(r.Context(), creds, re, hex.EncodeToString(sum[:]), scope[3], scope[2], date); err != nil {
		return "InvalidSignatureException", "cannot compute the signature"
	}
	if subtle.ConstantTimeCompare([]byte(re.Header.Get("Authorization")), []byte(auth)) != 1 {
		return "InvalidSignatureException", "the request signature does not match"
	}
	return "", ""
}

func sfnDeny(w http.ResponseWriter, code, msg string) {
	b, _ := json.Marshal(map[string]string{"__type": code, "message": msg})
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(http.StatusForbidden)
	_, _ = w.Write(b)
}
