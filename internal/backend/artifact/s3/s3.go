package s3

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/keelrun/keel/internal/kernel/artifact"
)

// Client is the part of *s3.Client the store uses.
type Client interface {
	PutObject(ctx context.Context, in *awss3.PutObjectInput, opts ...func(*awss3.Options)) (*awss3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *awss3.GetObjectInput, opts ...func(*awss3.Options)) (*awss3.GetObjectOutput, error)
	HeadObject(ctx context.Context, in *awss3.HeadObjectInput, opts ...func(*awss3.Options)) (*awss3.HeadObjectOutput, error)
	awss3.ListObjectsV2APIClient
}

var _ Client = (*awss3.Client)(nil)

// Options configure a Store.
type Options struct {
	Bucket string
	// Prefix is prepended to every key, e.g. "keel/"; empty by default.
	Prefix string
	// SSE is the server-side encryption to request ("AES256", "aws:kms",
	// "aws:kms:dsse"); empty leaves the bucket default.
	SSE types.ServerSideEncryption
	// KMSKeyID is the KMS key for aws:kms; empty uses the AWS managed key.
	KMSKeyID string
	// BucketKey enables S3 Bucket Keys for SSE-KMS.
	BucketKey bool
	// ListPageSize is MaxKeys per ListObjectsV2 page; 0 leaves S3's 1000.
	ListPageSize int32
}

// Store is an S3 artifact store, safe for concurrent use.
type Store struct {
	c    Client
	opts Options
}

var _ artifact.Store = (*Store)(nil)

// MetaSHA256 is the user-metadata key holding the hex sha256 of an object.
const MetaSHA256 = "sha256"

// conflictRetries bounds retries of a 409 ConditionalRequestConflict.
const conflictRetries = 5

// New returns a store writing to opts.Bucket through c.
func New(c Client, opts Options) (*Store, error) {
	if c == nil {
		return nil, errors.New("artifact s3: nil client")
	}
	if opts.Bucket == "" {
		return nil, errors.New("artifact s3: empty bucket")
	}
	return &Store{c: c, opts: opts}, nil
}

func (s *Store) objectKey(k artifact.Key) string { return s.opts.Prefix + k.Path() }

// Put stores data at k unless the key exists; see the package doc.
func (s *Store) Put(ctx context.Context, k artifact.Key, data []byte) (artifact.Info, error) {
	if err := k.Validate(); err != nil {
		return artifact.Info{}, err
	}
	sum := sha256.Sum256(data)
	info := artifact.Info{Key: k, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data))}
	in := &awss3.PutObjectInput{
		Bucket:         aws.String(s.opts.Bucket),
		Key:            aws.String(s.objectKey(k)),
		ContentLength:  aws.Int64(info.Size),
		ContentType:    aws.String("application/octet-stream"),
		IfNoneMatch:    aws.String("*"),
		Metadata:       map[string]string{MetaSHA256: info.SHA256},
		ChecksumSHA256: aws.String(base64.StdEncoding.EncodeToString(sum[:])),
	}
	if s.opts.SSE != "" {
		in.ServerSideEncryption = s.opts.SSE
		if s.opts.KMSKeyID != "" {
			in.SSEKMSKeyId = aws.String(s.opts.KMSKeyID)
		}
		if s.opts.BucketKey {
			in.BucketKeyEnabled = aws.Bool(true)
		}
	}
	for attempt := 0; ; attempt++ {
		in.Body = bytes.NewReader(data)
		_, err := s.c.PutObject(ctx, in)
		if err == nil {
			return info, nil
		}
		switch apiCode(err) {
		case "PreconditionFailed":
			existing, herr := s.head(ctx, k)
			if herr != nil {
				return artifact.Info{}, herr
			}
			if existing.SHA256 == info.SHA256 && existing.Size == info.Size {
				return info, nil
			}
			return artifact.Info{}, fmt.Errorf("%w: %s", artifact.ErrExists, k.Path())
		case "ConditionalRequestConflict":
			if attempt < conflictRetries {
				if werr := sleep(ctx, time.Duration(attempt+1)*20*time.Millisecond); werr != nil {
					return artifact.Info{}, werr
				}
				continue
			}
		}
		return artifact.Info{}, fmt.Errorf("artifact s3: put %s: %w", k.Path(), err)
	}
}

// Get returns the content at k after checking it; see the package doc.
func (s *Store) Get(ctx context.Context, k artifact.Key) ([]byte, artifact.Info, error) {
	if err := k.Validate(); err != nil {
		return nil, artifact.Info{}, err
	}
	out, err := s.c.GetObject(ctx, &awss3.GetObjectInput{
		Bucket:       aws.String(s.opts.Bucket),
		Key:          aws.String(s.objectKey(k)),
		ChecksumMode: types.ChecksumModeEnabled,
	}, withoutSDKChecksumValidation)
	if err != nil {
		if isNotFound(err) {
			return nil, artifact.Info{}, fmt.Errorf("%w: %s", artifact.ErrNotFound, k.Path())
		}
		return nil, artifact.Info{}, fmt.Errorf("artifact s3: get %s: %w", k.Path(), err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, artifact.Info{}, fmt.Errorf("artifact s3: read %s: %w", k.Path(), err)
	}
	want := metaSHA256(out.Metadata)
	sum := sha256.Sum256(data)
	got := hex.EncodeToString(sum[:])
	if want == "" {
		return nil, artifact.Info{}, fmt.Errorf("%w: %s: no sha256 metadata", artifact.ErrCorrupt, k.Path())
	}
	if got != want {
		return nil, artifact.Info{}, fmt.Errorf("%w: %s", artifact.ErrCorrupt, k.Path())
	}
	if cs := aws.ToString(out.ChecksumSHA256); cs != "" && !strings.Contains(cs, "-") &&
		cs != base64.StdEncoding.EncodeToString(sum[:]) {
		// A composite checksum (multipart) has a "-N" suffix and is not a
		// hash of the whole body; anything else must match.
		return nil, artifact.Info{}, fmt.Errorf("%w: %s: ChecksumSHA256 mismatch", artifact.ErrCorrupt, k.Path())
	}
	return data, artifact.Info{Key: k, SHA256: got, Size: int64(len(data))}, nil
}

// withoutSDKChecksumValidation removes the SDK's own response checksum
// check, which fails the body read with an unexported error type; Get
// compares ChecksumSHA256 itself so a mismatch is artifact.ErrCorrupt.
func withoutSDKChecksumValidation(o *awss3.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		// Absent when the SDK decided not to validate: nothing to remove.
		_, _ = st.Deserialize.Remove("AWSChecksum:ValidateOutputPayloadChecksum")
		return nil
	})
}

// head reads k's recorded hash and size.
func (s *Store) head(ctx context.Context, k artifact.Key) (artifact.Info, error) {
	out, err := s.c.HeadObject(ctx, &awss3.HeadObjectInput{
		Bucket: aws.String(s.opts.Bucket),
		Key:    aws.String(s.objectKey(k)),
	})
	if err != nil {
		if isNotFound(err) {
			return artifact.Info{}, fmt.Errorf("%w: %s", artifact.ErrNotFound, k.Path())
		}
		return artifact.Info{}, fmt.Errorf("artifact s3: head %s: %w", k.Path(), err)
	}
	return artifact.Info{Key: k, SHA256: metaSHA256(out.Metadata), Size: aws.ToInt64(out.ContentLength)}, nil
}

// List returns the run's blobs ordered by key; see the package doc.
func (s *Store) List(ctx context.Context, runID string) ([]artifact.Info, error) {
	if err := (artifact.Key{RunID: runID, CheckpointID: "x", Name: "x"}).Validate(); err != nil {
		return nil, err
	}
	prefix := s.opts.Prefix + "runs/" + runID + "/checkpoints/"
	in := &awss3.ListObjectsV2Input{Bucket: aws.String(s.opts.Bucket), Prefix: aws.String(prefix)}
	if s.opts.ListPageSize > 0 {
		in.MaxKeys = aws.Int32(s.opts.ListPageSize)
	}
	var out []artifact.Info
	p := awss3.NewListObjectsV2Paginator(s.c, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("artifact s3: list %s: %w", runID, err)
		}
		for _, o := range page.Contents {
			k, err := artifact.ParsePath(strings.TrimPrefix(aws.ToString(o.Key), s.opts.Prefix))
			if err != nil || k.RunID != runID {
				continue // not an artifact key: someone else's object
			}
			info, err := s.head(ctx, k)
			if err != nil {
				return nil, err
			}
			out = append(out, info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key.Path() < out[j].Key.Path() })
	return out, nil
}

// metaSHA256 finds the hash whatever case the server gave the key.
func metaSHA256(m map[string]string) string {
	for k, v := range m {
		if strings.EqualFold(k, MetaSHA256) {
			return v
		}
	}
	return ""
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func isNotFound(err error) bool {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return true
	}
	var re *smithyhttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
