package awslocal

import (
	"encoding/json"
	"fmt"
	"net"
	"sort"
)

// EnvHostAddr overrides the discovered address where LocalStack's Lambda
// containers reach this host (Docker Desktop: the containers run in a VM
// whose bridge gateway is not this host; use an address of this host the
// VM routes to and that this host can listen on).
const EnvHostAddr = "KEEL_LOCALSTACK_HOST_ADDR"

// containerInspect is the part of `docker inspect <container>` read here.
type containerInspect struct {
	Name            string `json:"Name"`
	NetworkSettings struct {
		Networks map[string]struct {
			Gateway   string `json:"Gateway"`
			IPAddress string `json:"IPAddress"`
		} `json:"Networks"`
	} `json:"NetworkSettings"`
}

// HostAddress is where the servers a scenario runs for the functions
// (the publication service, Keel's executor) must listen so that
// LocalStack's Lambda containers reach them: the gateway of the Docker
// network those containers join, which on a Linux engine is this host's
// own address on that bridge.
//
// LocalStack puts its Lambda containers on LAMBDA_DOCKER_NETWORK when set,
// else on the network of its own container (what `docker inspect` of the
// LocalStack container shows; compose makes it localstack_default, a
// plain `docker run` the default bridge). override (KEEL_LOCALSTACK_HOST_ADDR)
// wins over both. inspect is the JSON of `docker inspect <LocalStack
// container>`. The error names what to set when nothing fits.
func HostAddress(inspect []byte, lambdaNetwork, override string) (string, error) {
	if override != "" {
		if net.ParseIP(override) == nil {
			return "", fmt.Errorf("%s=%q is not an IP address", EnvHostAddr, override)
		}
		return override, nil
	}
	var cs []containerInspect
	if err := json.Unmarshal(inspect, &cs); err != nil {
		return "", fmt.Errorf("docker inspect of the LocalStack container (or set %s): %w", EnvHostAddr, err)
	}
	if len(cs) != 1 {
		return "", fmt.Errorf("docker inspect of the LocalStack container: %d containers, want 1 (or set %s)", len(cs), EnvHostAddr)
	}
	nets := cs[0].NetworkSettings.Networks
	name := lambdaNetwork
	if name == "" {
		if len(nets) != 1 {
			names := make([]string, 0, len(nets))
			for n := range nets {
				names = append(names, n)
			}
			sort.Strings(names)
			return "", fmt.Errorf("the LocalStack container %s is on networks %v: set LAMBDA_DOCKER_NETWORK (as LocalStack has it) or %s", cs[0].Name, names, EnvHostAddr)
		}
		for n := range nets {
			name = n
		}
	}
	n, ok := nets[name]
	if !ok {
		return "", fmt.Errorf("the LocalStack container %s is not on network %q (LAMBDA_DOCKER_NETWORK): set %s", cs[0].Name, name, EnvHostAddr)
	}
	if ip := net.ParseIP(n.Gateway); ip == nil || ip.IsUnspecified() {
		return "", fmt.Errorf("network %q of %s has no gateway address (host networking?): set %s", name, cs[0].Name, EnvHostAddr)
	}
	return n.Gateway, nil
}

// listenOn listens on an ephemeral port of addr, saying which address
// failed and how to choose another.
func listenOn(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return nil, fmt.Errorf("awslocal: listen where the Lambda containers reach this host (%s; %s overrides it): %w", addr, EnvHostAddr, err)
	}
	return ln, nil
}
