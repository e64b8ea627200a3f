package awsbackend

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/endpointcreds"
)

// ecsCredentialsHost is where ECS and Fargate serve a task role's
// credentials; AWS_CONTAINER_CREDENTIALS_RELATIVE_URI is a path on it.
const ecsCredentialsHost = "http://169.254.170.2"

// containerCredentials is the credentials provider of a container's
// credentials endpoint, as config.LoadDefaultConfig resolves it: a Fargate
// task (Keel's task role) gets AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, EKS
// and local endpoints AWS_CONTAINER_CREDENTIALS_FULL_URI with a token in
// AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE (read again at each refresh) or
// AWS_CONTAINER_AUTHORIZATION_TOKEN. ok is false when neither URI is set.
//
// A FULL_URI over plain http must name its host as an address the SDK
// also allows — loopback, 169.254.170.2, 169.254.170.23, fd00:ec2::23 —
// or "localhost": a credential request carries the token, and no name is
// looked up in DNS to decide where it may go.
func containerCredentials(getenv func(string) string) (p aws.CredentialsProvider, ok bool, err error) {
	endpoint := getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI")
	if rel := getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"); rel != "" {
		// The SDK's order: the relative URI wins when both are set.
		if !strings.HasPrefix(rel, "/") {
			return nil, false, fmt.Errorf("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI %q: want a path starting with /", rel)
		}
		endpoint = ecsCredentialsHost + rel
	} else if endpoint != "" {
		if err := checkCredentialsURL(endpoint); err != nil {
			return nil, false, fmt.Errorf("AWS_CONTAINER_CREDENTIALS_FULL_URI: %w", err)
		}
	}
	if endpoint == "" {
		return nil, false, nil
	}
	token, tokenFile := getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN"), getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")
	prov := endpointcreds.New(endpoint, func(o *endpointcreds.Options) {
		o.AuthorizationToken = token
		if tokenFile != "" {
			o.AuthorizationTokenProvider = endpointcreds.TokenProviderFunc(func() (string, error) {
				b, err := os.ReadFile(tokenFile)
				if err != nil {
					return "", fmt.Errorf("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: %w", err)
				}
				return strings.TrimSpace(string(b)), nil
			})
		}
	})
	return aws.NewCredentialsCache(prov), true, nil
}

// checkCredentialsURL refuses a full credentials URI a token must not be
// sent to (see containerCredentials). The error holds no token.
func checkCredentialsURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", raw, err)
	}
	host := u.Hostname()
	switch {
	case host == "":
		return fmt.Errorf("%q has no host", raw)
	case u.Scheme == "https":
		return nil
	case u.Scheme != "http":
		return fmt.Errorf("%q: want an http or https URL", raw)
	case host == "localhost":
		return nil
	}
	ip := net.ParseIP(host)
	if ip != nil && (ip.IsLoopback() || ip.Equal(net.IPv4(169, 254, 170, 2)) || ip.Equal(net.IPv4(169, 254, 170, 23)) ||
		ip.Equal(net.ParseIP("fd00:ec2::23"))) {
		return nil
	}
	return fmt.Errorf("%q: over http only a loopback, ECS (169.254.170.2) or EKS (169.254.170.23, fd00:ec2::23) host, else https", raw)
}
