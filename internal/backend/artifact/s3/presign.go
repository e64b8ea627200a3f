package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/keelrun/keel/internal/kernel/artifact"
)

// StagingPrefix is where holders of an upload grant (Presigner.Upload) put
// objects: outside every run's artifacts, so a grant can never overwrite
// an artifact (S3's POST has no If-None-Match), and one prefix a bucket
// lifecycle rule can expire.
const StagingPrefix = "workspace-staging/"

// Presigner makes URLs that let a process holding no AWS credential read
// given artifacts, or upload under one run's staging prefix (the AWS
// command runner). The worker that makes them needs the permissions the
// URLs exercise (s3:GetObject on the artifacts, s3:PutObject on the
// staging prefix).
type Presigner struct {
	c    *awss3.Client
	pc   *awss3.PresignClient
	opts Options
}

// NewPresigner presigns with c's credentials for opts.Bucket and Prefix
// (the Store's).
func NewPresigner(c *awss3.Client, opts Options) (*Presigner, error) {
	if c == nil || opts.Bucket == "" {
		return nil, errors.New("artifact s3: presigner needs a client and a bucket")
	}
	return &Presigner{c: c, pc: awss3.NewPresignClient(c), opts: opts}, nil
}

// GetURL is a GET of k's object valid for ttl.
func (p *Presigner) GetURL(ctx context.Context, k artifact.Key, ttl time.Duration) (string, error) {
	if err := k.Validate(); err != nil {
		return "", err
	}
	r, err := p.pc.PresignGetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String(p.opts.Bucket), Key: aws.String(p.opts.Prefix + k.Path())},
		awss3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("artifact s3: presign get %s: %w", k.Path(), err)
	}
	return r.URL, nil
}

// Upload is a presigned POST: send Fields, then "key" (KeyPrefix and a
// name), then the file, as multipart/form-data to URL.
type Upload struct {
	URL       string            `json:"url"`
	Fields    map[string]string `json:"fields"`
	KeyPrefix string            `json:"key_prefix"`
	MaxBytes  int64             `json:"max_bytes"`
}

var grantPart = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// Upload grants, for ttl, uploads of objects of at most maxBytes whose key
// starts with the staging prefix of runID and grant (a fresh name per
// command): the policy's only conditions are that prefix (`starts-with
// $key`), the bucket and the size.
func (p *Presigner) Upload(ctx context.Context, runID, grant string, maxBytes int64, ttl time.Duration) (Upload, error) {
	if !grantPart.MatchString(runID) || !grantPart.MatchString(grant) {
		return Upload{}, fmt.Errorf("%w: staging run %q, grant %q", artifact.ErrInvalid, runID, grant)
	}
	prefix := p.stagingKey(runID, grant, "")
	r, err := p.pc.PresignPostObject(ctx, &awss3.PutObjectInput{Bucket: aws.String(p.opts.Bucket), Key: aws.String(prefix + "${filename}")},
		func(o *awss3.PresignPostOptions) {
			o.Expires = ttl
			o.Conditions = []any{
				[]any{"starts-with", "$key", prefix},
				[]any{"content-length-range", 0, maxBytes},
			}
		})
	if err != nil {
		return Upload{}, fmt.Errorf("artifact s3: presign upload for run %s: %w", runID, err)
	}
	fields := map[string]string{}
	for k, v := range r.Values {
		if k != "key" {
			fields[k] = v
		}
	}
	return Upload{URL: r.URL, Fields: fields, KeyPrefix: prefix, MaxBytes: maxBytes}, nil
}

func (p *Presigner) stagingKey(runID, grant, name string) string {
	return p.opts.Prefix + StagingPrefix + runID + "/" + grant + "/" + name
}

// ReadStaged returns the object name of runID's grant, at most max bytes.
// Nothing vouches for its content: the caller checks it (a staged blob is
// named by its sha256).
func (p *Presigner) ReadStaged(ctx context.Context, runID, grant, name string, max int64) ([]byte, error) {
	if !grantPart.MatchString(runID) || !grantPart.MatchString(grant) || !grantPart.MatchString(name) {
		return nil, fmt.Errorf("%w: staged %q/%q/%q", artifact.ErrInvalid, runID, grant, name)
	}
	key := p.stagingKey(runID, grant, name)
	out, err := p.c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String(p.opts.Bucket), Key: aws.String(key)})
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("%w: %s", artifact.ErrNotFound, key)
		}
		return nil, fmt.Errorf("artifact s3: get %s: %w", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("artifact s3: read %s: %w", key, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: %s is over %d bytes", artifact.ErrCorrupt, key, max)
	}
	return b, nil
}
