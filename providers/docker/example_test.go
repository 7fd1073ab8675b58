package docker_test

import (
	"fmt"

	"github.com/benchflow/benchflow/providers"
	"github.com/benchflow/benchflow/providers/docker"
)

// Two providers of one type, as in `provider "docker" "nat" {}` and
// `provider "docker" "hostnet" { network = "host" }`: the port a server
// listens on inside the container differs.
func ExampleNew() {
	port := providers.Port{Name: "http", Container: 80, Host: 41234}
	for _, cfg := range []*docker.Config{{}, {Network: "host"}} {
		p, err := docker.New(&providers.NewRequest{Name: "x", Config: cfg})
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(p.(providers.ListenPorter).ListenPort(port), p.(providers.ServiceDirer).ServiceDir("nginx"))
	}
	_, err := docker.New(&providers.NewRequest{Name: "nat", Config: &docker.Config{Memory: "lots"}})
	fmt.Println(err)
	// Output:
	// 80 /etc/benchflow
	// 41234 /etc/benchflow
	// configuring docker provider "nat": memory: "lots" is not a size like "512MiB" or "1g"
}
