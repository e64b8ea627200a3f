package awslocal

import (
	"strings"
	"testing"
)

func TestHostAddress(t *testing.T) {
	// docker inspect shapes: a compose network, the default bridge, two
	// networks, host networking (no gateway).
	compose := `[{"Name":"/localstack-main","NetworkSettings":{"Networks":{"localstack_default":{"Gateway":"172.18.0.1","IPAddress":"172.18.0.2"}}}}]`
	bridge := `[{"Name":"/localstack-main","NetworkSettings":{"Networks":{"bridge":{"Gateway":"172.17.0.1","IPAddress":"172.17.0.2"}}}}]`
	two := `[{"Name":"/localstack-main","NetworkSettings":{"Networks":{"ls":{"Gateway":"172.20.0.1"},"other":{"Gateway":"172.21.0.1"}}}}]`
	host := `[{"Name":"/localstack-main","NetworkSettings":{"Networks":{"host":{"Gateway":"","IPAddress":""}}}}]`
	for _, tc := range []struct {
		name, inspect, network, override string
		want, errHas                     string
	}{
		{name: "compose network", inspect: compose, want: "172.18.0.1"},
		{name: "default bridge", inspect: bridge, want: "172.17.0.1"},
		{name: "LAMBDA_DOCKER_NETWORK picks", inspect: two, network: "other", want: "172.21.0.1"},
		{name: "two networks, none named", inspect: two, errHas: "set LAMBDA_DOCKER_NETWORK"},
		{name: "named network absent", inspect: compose, network: "nope", errHas: `not on network "nope"`},
		{name: "host networking", inspect: host, errHas: "no gateway address"},
		{name: "override wins", inspect: host, override: "192.168.65.254", want: "192.168.65.254"},
		{name: "override not an address", inspect: compose, override: "host.docker.internal", errHas: "is not an IP address"},
		{name: "not inspect JSON", inspect: `Error: No such object`, errHas: "docker inspect of the LocalStack container"},
		{name: "no container", inspect: `[]`, errHas: "0 containers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := HostAddress([]byte(tc.inspect), tc.network, tc.override)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("got %q, %v; want an error with %q", got, err, tc.errHas)
				}
				if !strings.Contains(err.Error(), EnvHostAddr) {
					t.Errorf("error %q does not name %s", err, EnvHostAddr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestListenOn(t *testing.T) {
	ln, err := listenOn("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	// 192.0.2.1 (TEST-NET-1) is no address of this host.
	if ln, err := listenOn("192.0.2.1"); err == nil {
		ln.Close()
		t.Fatal("listened on an address this host does not have")
	} else if !strings.Contains(err.Error(), EnvHostAddr) {
		t.Errorf("error %q does not name %s", err, EnvHostAddr)
	}
}
