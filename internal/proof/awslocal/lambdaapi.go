package awslocal

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
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// LambdaAPI is the Lambda REST API (2015-03-31) on an endpoint, signed
// with SigV4 as the SDKs sign it. Keel's runtime needs no Lambda client, so
// this test kit speaks the three calls it makes itself.
type LambdaAPI struct {
	Endpoint string
	Region   string
	Creds    aws.CredentialsProvider
	HTTP     *http.Client
}

// Invocation is one Invoke's answer.
type Invocation struct {
	Status        int
	FunctionError string // X-Amz-Function-Error: the payload is an error
	Payload       []byte
}

func (l *LambdaAPI) do(ctx context.Context, method, path string, body []byte) (int, http.Header, []byte, error) {
	return l.signed(ctx, method, path, "application/json", "lambda", body)
}

// signed sends one SigV4-signed request to the endpoint.
func (l *LambdaAPI) signed(ctx context.Context, method, path, contentType, service string, body []byte) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, l.Endpoint+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", contentType)
	creds, err := l.Creds.Retrieve(ctx)
	if err != nil {
		return 0, nil, nil, err
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), service, l.Region, time.Now()); err != nil {
		return 0, nil, nil, err
	}
	hc := l.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

// CreateFunction creates a function from a CreateFunction request body.
func (l *LambdaAPI) CreateFunction(ctx context.Context, req map[string]any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	st, _, b, err := l.do(ctx, http.MethodPost, "/2015-03-31/functions", body)
	if err != nil {
		return fmt.Errorf("lambda CreateFunction: %w", err)
	}
	if st/100 != 2 {
		return fmt.Errorf("lambda CreateFunction %v: HTTP %d: %s", req["FunctionName"], st, b)
	}
	return nil
}

// Invoke invokes a function synchronously (RequestResponse).
func (l *LambdaAPI) Invoke(ctx context.Context, function string, payload []byte) (Invocation, error) {
	st, h, b, err := l.do(ctx, http.MethodPost, "/2015-03-31/functions/"+url.PathEscape(function)+"/invocations", payload)
	if err != nil {
		return Invocation{}, fmt.Errorf("lambda Invoke %s: %w", function, err)
	}
	return Invocation{Status: st, FunctionError: h.Get("X-Amz-Function-Error"), Payload: b}, nil
}

// CreateRole creates an IAM role (the Query protocol's CreateRole): Lambda
// refuses a function whose role it cannot assume.
func (l *LambdaAPI) CreateRole(ctx context.Context, name, assumePolicy string) error {
	form := url.Values{"Action": {"CreateRole"}, "Version": {"2010-05-08"}, "RoleName": {name}, "AssumeRolePolicyDocument": {assumePolicy}}
	st, _, b, err := l.signed(ctx, http.MethodPost, "/", "application/x-www-form-urlencoded; charset=utf-8", "iam", []byte(form.Encode()))
	if err != nil {
		return fmt.Errorf("iam CreateRole: %w", err)
	}
	if st/100 != 2 {
		return fmt.Errorf("iam CreateRole %s: HTTP %d: %s", name, st, b)
	}
	return nil
}

// FunctionState is GetFunction's Configuration.State ("Pending",
// "Active", "Failed") and StateReason: a function can be invoked once it
// is Active.
func (l *LambdaAPI) FunctionState(ctx context.Context, function string) (state, reason string, err error) {
	st, _, b, err := l.do(ctx, http.MethodGet, "/2015-03-31/functions/"+url.PathEscape(function), nil)
	if err != nil {
		return "", "", fmt.Errorf("lambda GetFunction %s: %w", function, err)
	}
	if st/100 != 2 {
		return "", "", fmt.Errorf("lambda GetFunction %s: HTTP %d: %s", function, st, b)
	}
	var out struct {
		Configuration struct{ State, StateReason string }
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return "", "", fmt.Errorf("lambda GetFunction %s: %w", function, err)
	}
	return out.Configuration.State, out.Configuration.StateReason, nil
}

// DeleteFunction deletes a function (LocalStack then stops its
// containers).
func (l *LambdaAPI) DeleteFunction(ctx context.Context, function string) error {
	st, _, b, err := l.do(ctx, http.MethodDelete, "/2015-03-31/functions/"+url.PathEscape(function), nil)
	if err != nil {
		return fmt.Errorf("lambda DeleteFunction %s: %w", function, err)
	}
	if st/100 != 2 {
		return fmt.Errorf("lambda DeleteFunction %s: HTTP %d: %s", function, st, b)
	}
	return nil
}
