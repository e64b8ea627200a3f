package awsbackend

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// EnvConfig builds the AWS configuration of a Lambda function (or of a
// Fargate task: containerCredentials) from the variables the runtime sets, without config.LoadDefaultConfig:
// that loader reads ~/.aws files, knows SSO, STS web identity, process
// and IMDS credentials, and links their clients — none of which a Lambda
// function uses (its execution role's credentials are in its environment),
// and all of which cost bootstrap size and start time.
//
// It reads AWS_REGION (else AWS_DEFAULT_REGION, else us-east-1, as
// compose's loadAWSConfig defaults), AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN — else a container's credentials endpoint
// (containerCredentials) —, AWS_ENDPOINT_URL and the service-specific
// AWS_ENDPOINT_URL_<SERVICE> (AWS_ENDPOINT_URL_SFN, ..._DYNAMODB, ..._S3),
// and AWS_MAX_ATTEMPTS. An error names the variable at fault; it never
// carries a credential.
func EnvConfig(getenv func(string) string) (aws.Config, error) {
	cfg := aws.Config{Region: getenv("AWS_REGION")}
	if cfg.Region == "" {
		cfg.Region = getenv("AWS_DEFAULT_REGION")
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	id, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	switch {
	case id == "" && secret == "":
		p, ok, err := containerCredentials(getenv)
		if err != nil {
			return cfg, fmt.Errorf("AWS credentials: %w", err)
		}
		if !ok {
			return cfg, fmt.Errorf("AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set (Lambda sets them from the function's execution role), nor AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI (ECS and Fargate set the first from the task role)")
		}
		cfg.Credentials = p
	case id == "":
		return cfg, fmt.Errorf("AWS credentials: AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not")
	case secret == "":
		return cfg, fmt.Errorf("AWS credentials: AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not")
	default:
		cfg.Credentials = aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(id, secret, getenv("AWS_SESSION_TOKEN")))
	}
	if u := getenv("AWS_ENDPOINT_URL"); u != "" {
		cfg.BaseEndpoint = aws.String(u)
	}
	if s := getenv("AWS_MAX_ATTEMPTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return cfg, fmt.Errorf("AWS_MAX_ATTEMPTS %q: want a whole number ≥ 1", s)
		}
		cfg.RetryMaxAttempts = n
	}
	// Each service client asks its configuration sources for its own
	// endpoint (AWS_ENDPOINT_URL_SFN ...), as it does of LoadDefaultConfig's.
	cfg.ConfigSources = []any{serviceEndpoints{getenv: getenv}}
	return cfg, nil
}

// serviceEndpoints answers a client's question for its service-specific
// endpoint, AWS_ENDPOINT_URL_<SDK ID> with the id upper-cased and spaces
// made underscores, as the SDK's own environment source does.
type serviceEndpoints struct{ getenv func(string) string }

// GetServiceBaseEndpoint is the method the service clients look for among
// aws.Config.ConfigSources.
func (s serviceEndpoints) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	v := s.getenv("AWS_ENDPOINT_URL_" + strings.ReplaceAll(strings.ToUpper(sdkID), " ", "_"))
	return v, v != "", nil
}
