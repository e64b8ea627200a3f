package awslocal

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// lambdaCall sends one Lambda API request and decodes a 2xx answer into
// out (when not nil).
func (l *LambdaAPI) lambdaCall(ctx context.Context, op, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	st, _, b, err := l.do(ctx, method, path, body)
	if err != nil {
		return fmt.Errorf("lambda %s: %w", op, err)
	}
	if st/100 != 2 {
		return fmt.Errorf("lambda %s: HTTP %d: %s", op, st, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

func fnPath(function string) string { return "/2015-03-31/functions/" + url.PathEscape(function) }

// PublishVersion publishes function's $LATEST and returns the version.
func (l *LambdaAPI) PublishVersion(ctx context.Context, function string) (string, error) {
	var out struct{ Version string }
	err := l.lambdaCall(ctx, "PublishVersion "+function, http.MethodPost, fnPath(function)+"/versions", map[string]any{}, &out)
	return out.Version, err
}

// CreateAlias points a new alias of function at version.
func (l *LambdaAPI) CreateAlias(ctx context.Context, function, alias, version string) error {
	return l.lambdaCall(ctx, "CreateAlias "+function, http.MethodPost, fnPath(function)+"/aliases",
		map[string]any{"Name": alias, "FunctionVersion": version}, nil)
}

// UpdateAlias moves an alias of function to version.
func (l *LambdaAPI) UpdateAlias(ctx context.Context, function, alias, version string) error {
	return l.lambdaCall(ctx, "UpdateAlias "+function, http.MethodPut, fnPath(function)+"/aliases/"+url.PathEscape(alias),
		map[string]any{"FunctionVersion": version}, nil)
}

// UpdateDescription changes function's configuration (a deploy's code
// change, as far as publishing a version is concerned).
func (l *LambdaAPI) UpdateDescription(ctx context.Context, function, desc string) error {
	return l.lambdaCall(ctx, "UpdateFunctionConfiguration "+function, http.MethodPut, fnPath(function)+"/configuration",
		map[string]any{"Description": desc}, nil)
}

// Versions lists function's published versions (without $LATEST).
func (l *LambdaAPI) Versions(ctx context.Context, function string) ([]string, error) {
	var out struct{ Versions []struct{ Version string } }
	if err := l.lambdaCall(ctx, "ListVersionsByFunction "+function, http.MethodGet, fnPath(function)+"/versions", nil, &out); err != nil {
		return nil, err
	}
	var vs []string
	for _, v := range out.Versions {
		if v.Version != "$LATEST" {
			vs = append(vs, v.Version)
		}
	}
	return vs, nil
}
