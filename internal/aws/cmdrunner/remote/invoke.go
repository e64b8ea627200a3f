package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// LambdaInvoker calls Lambda's Invoke (REST API 2015-03-31, SigV4) with
// the tenant in X-Amz-Tenant-Id, as the Lambda docs give it for a function
// with tenant isolation. Keel's runtime links no Lambda SDK client; this is
// the one call it makes.
type LambdaInvoker struct {
	// Endpoint is the Lambda endpoint ("" is https://lambda.{Region}.amazonaws.com).
	Endpoint string
	Region   string
	Creds    aws.CredentialsProvider
	HTTP     *http.Client
}

// FunctionError is an invocation whose function failed (X-Amz-Function-Error).
type FunctionError struct {
	Type, Message string
}

func (e *FunctionError) Error() string {
	return fmt.Sprintf("command runner function error %s: %s", e.Type, e.Message)
}

// Invoke implements Invoker.
func (l *LambdaInvoker) Invoke(ctx context.Context, function, tenant string, payload []byte) ([]byte, error) {
	ep := l.Endpoint
	if ep == "" {
		ep = "https://lambda." + l.Region + ".amazonaws.com"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(ep, "/")+"/2015-03-31/functions/"+url.PathEscape(function)+"/invocations", bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Amz-Tenant-Id", tenant)
	creds, err := l.Creds.Retrieve(ctx)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(payload)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "lambda", l.Region, time.Now()); err != nil {
		return nil, err
	}
	hc := l.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("lambda Invoke %s: HTTP %d: %s", function, resp.StatusCode, bytes.TrimSpace(b))
	}
	if fe := resp.Header.Get("X-Amz-Function-Error"); fe != "" {
		var m struct{ ErrorType, ErrorMessage string }
		_ = json.Unmarshal(b, &m)
		return nil, &FunctionError{Type: m.ErrorType + " (" + fe + ")", Message: m.ErrorMessage}
	}
	return b, nil
}
