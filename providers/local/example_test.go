package local_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/benchflow/benchflow/providers"
	"github.com/benchflow/benchflow/providers/local"
)

// A service that fails at start: Alive quotes its exit status and output.
func Example() {
	ctx := context.Background()
	l, err := local.New("host", local.Config{StopTimeout: "2s"})
	if err != nil {
		panic(err)
	}
	dep, err := l.Provision(ctx, &providers.ProvisionRequest{
		RunID: "test-local-example",
		Service: providers.ServiceSpec{
			Name:    "web",
			Command: []string{"sh", "-c", "echo 'bind() failed: address in use' >&2; exit 1"},
			Ports:   []providers.Port{{Name: "http", Host: 8080}},
		},
	})
	if err != nil {
		panic(err)
	}
	defer dep.Teardown(context.Background())
	fmt.Println(dep.Endpoint().URL())

	var exit *local.ExitError
	for !errors.As(dep.(providers.Liveness).Alive(ctx), &exit) {
		time.Sleep(10 * time.Millisecond) // the engine polls like this while it waits for health
	}
	fmt.Println(exit.Status)
	fmt.Println(exit.Tail)
	// Output:
	// http://127.0.0.1:8080
	// exit status 1
	// [bind() failed: address in use]
}
