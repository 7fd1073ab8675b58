package nomad_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/benchflow/benchflow/providers"
	"github.com/benchflow/benchflow/providers/nomad"
	"github.com/benchflow/benchflow/providers/nomad/fake"
)

// Provision a service as a two-allocation Nomad job behind an APISIX
// route, here against the fakes, and call it through the gateway.
func Example() {
	stack := fake.NewStack("admin-key")
	defer stack.Close()
	os.Setenv("EXAMPLE_APISIX_KEY", "admin-key") // the key is read from a variable, never written in the config
	defer os.Unsetenv("EXAMPLE_APISIX_KEY")

	p, err := nomad.New(&providers.NewRequest{Name: "cluster", Config: &nomad.Config{
		Address:       stack.Nomad.URL(),
		ConsulAddress: stack.Consul.URL(),
		Driver:        "raw_exec",
		Count:         2,
		JobName:       "hello-world",
		Gateway:       true,
		APISIXAdmin:   stack.APISIX.AdminURL(),
		APISIXKeyEnv:  "EXAMPLE_APISIX_KEY",
		GatewayURL:    stack.APISIX.GatewayURL(),
		APISIXControl: stack.APISIX.ControlURL(),
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	dep, err := p.Provision(context.Background(), &providers.ProvisionRequest{
		RunID: "20261130T044500Z-3f9c", TrialID: "c01-r1",
		Service: providers.ServiceSpec{
			Name:    "web",
			Command: []string{"/usr/local/bin/benchflow", "serve", "--addr", "0.0.0.0:8080"},
			Ports:   []providers.Port{{Name: "http", Host: 8080}},
			Health:  providers.Health{HTTPPath: "/"},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dep.Teardown(context.Background())

	ep := dep.Endpoint()
	fmt.Println("job:", ep.Attrs["job"], "group:", ep.Attrs["group"], "task:", ep.Attrs["task"])
	fmt.Println("allocations:", len(strings.Split(ep.Attrs["allocations"], ",")))
	resp, err := http.Get(ep.Attrs["gateway_url"] + "/")
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, strings.HasPrefix(string(body), "hello from hello-world.servers["))
	// Output:
	// job: hello-world group: servers task: web
	// allocations: 2
	// 200 true
}
