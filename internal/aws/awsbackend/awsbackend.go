package awsbackend

import (
	"context"
	"errors"
	"github.com/keelrun/keel/internal/aws/cmdrunner/remote"
	"github.com/keelrun/keel/internal/runspace"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/keelrun/keel/internal/aws/sfnclient"
	"github.com/keelrun/keel/internal/aws/sweeper"
	keels3 "github.com/keelrun/keel/internal/backend/artifact/s3"
	"github.com/keelrun/keel/internal/backend/store/dynamo"
	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/store"
)

// Options tune the AWS backends.
type Options struct {
	// S3PathStyle addresses buckets as ENDPOINT/BUCKET instead of
	// BUCKET.ENDPOINT: needed by most S3-compatible servers (LocalStack,
	// gofakes3, MinIO) behind AWS_ENDPOINT_URL.
	S3PathStyle bool
	// S3 carries the server-side encryption settings and key prefix of
	// the artifact store; its Bucket is ignored (it comes from s3:BUCKET).
	S3 keels3.Options
	// Logger is the DynamoDB store's logger; nil means slog.Default().
	Logger *slog.Logger
}

// Openers open Keel's stores on AWS.
type Openers struct {
	// Store opens the DynamoDB store on a table; it spills large
	// checkpoint states to the artifact store it is given.
	Store func(ctx context.Context, table string, arts artifact.Store) (store.Store, error)
	// Artifacts opens the S3 artifact store on a bucket.
	Artifacts func(ctx context.Context, bucket string) (artifact.Store, error)
	// CommandRunner is the client of the command runner function (its
	// name or ARN) for the runs' workspaces in bucket: agents' commands
	// on AWS (internal/aws/cmdrunner).
	CommandRunner func(function, bucket string) (runspace.Remote, error)
}

// Backends returns the openers of the DynamoDB store and the S3 artifact
// store, both through clients built from cfg.
func Backends(cfg aws.Config, opts Options) Openers {
	return Openers{
		Store: func(_ context.Context, table string, arts artifact.Store) (store.Store, error) {
			return dynamo.New(dynamodb.NewFromConfig(cfg), dynamo.Options{Table: table, Artifacts: arts, Logger: opts.Logger})
		},
		Artifacts: func(_ context.Context, bucket string) (artifact.Store, error) {
			so := opts.S3
			so.Bucket = bucket
			return keels3.New(awss3.NewFromConfig(cfg, func(o *awss3.Options) { o.UsePathStyle = opts.S3PathStyle }), so)
		},
		CommandRunner: func(function, bucket string) (runspace.Remote, error) {
			so := opts.S3
			so.Bucket = bucket
			c := awss3.NewFromConfig(cfg, func(o *awss3.Options) { o.UsePathStyle = opts.S3PathStyle })
			arts, err := keels3.New(c, so)
			if err != nil {
				return nil, err
			}
			pre, err := keels3.NewPresigner(c, so)
			if err != nil {
				return nil, err
			}
			inv := &remote.LambdaInvoker{Endpoint: aws.ToString(cfg.BaseEndpoint), Region: cfg.Region, Creds: cfg.Credentials}
			return &remote.Client{Function: function, Invoke: inv, Presign: pre, Artifacts: arts}, nil
		},
	}
}

// SFN returns the Step Functions client on cfg.
func SFN(cfg aws.Config) (*sfnclient.Client, error) {
	return sfnclient.New(sfn.NewFromConfig(cfg))
}

// LocalSFN returns a Step Functions client for `keel dev`'s endpoint: the
// access key is "keel-dev" and the secret the dev token.
func LocalSFN(endpoint, token string) (*sfnclient.Client, error) {
	return sfnclient.New(sfn.New(sfn.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("keel-dev", token, ""),
	}))
}

// Executions adapts a sfnclient.Starter to roles.Executions. An
// execution that already exists under the run's name counts as started:
// the name is the run id, so it is this run's execution (running or
// closed), and starting a run is idempotent.
type Executions struct{ Starter sfnclient.Starter }

// StartExecution implements roles.Executions.
func (x Executions) StartExecution(ctx context.Context, arn, name, input string) error {
	_, err := x.Starter.StartExecution(ctx, arn, name, input)
	if errors.Is(err, sfnclient.ErrExecutionAlreadyExists) {
		return nil
	}
	return err
}

// SweepExecutions adapts a Step Functions client to sweeper.Executions
// for the executions of one state machine.
type SweepExecutions struct {
	Client interface {
		sfnclient.Starter
		sfnclient.Describer
	}
	StateMachineARN string
}

var _ sweeper.Executions = SweepExecutions{}

// ExecutionStatus implements sweeper.Executions.
func (x SweepExecutions) ExecutionStatus(ctx context.Context, name string) (string, error) {
	d, err := x.Client.DescribeExecution(ctx, sfnclient.ExecutionARN(x.StateMachineARN, name))
	if errors.Is(err, sfnclient.ErrExecutionDoesNotExist) {
		return "", sweeper.ErrNoExecution
	}
	return d.Status, err
}

// StartExecution implements sweeper.Executions.
func (x SweepExecutions) StartExecution(ctx context.Context, name, input string) error {
	return Executions{Starter: x.Client}.StartExecution(ctx, x.StateMachineARN, name, input)
}
