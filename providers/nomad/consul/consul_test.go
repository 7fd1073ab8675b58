package consul_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/benchflow/benchflow/providers/nomad/consul"
	"github.com/benchflow/benchflow/providers/nomad/fake"
)

func TestWaitPassingBlocks(t *testing.T) {
	f := fake.NewConsul()
	defer f.Close()
	c, err := consul.NewClient(f.URL(), "")
	if err != nil {
		t.Fatal(err)
	}
	f.Register(fake.Instance{ID: "a", Name: "web", Address: "127.0.0.1", Port: 9001, Status: fake.StatusPassing})
	f.Register(fake.Instance{ID: "b", Name: "web", Address: "127.0.0.1", Port: 9000, Status: fake.StatusCritical})
	got := make(chan []consul.Instance, 1)
	errc := make(chan error, 1)
	start := f.Index()
	go func() {
		ins, err := consul.WaitPassing(context.Background(), c, "web", "", 2, 10*time.Second)
		got <- ins
		errc <- err
	}()
	// b turning passing releases the waiter, whether its query is
	// blocked at that moment or not yet sent.
	f.SetStatus("b", fake.StatusPassing)
	ins, err := <-got, <-errc
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) != 2 || ins[0].Addr() != "127.0.0.1:9000" || ins[1].Addr() != "127.0.0.1:9001" {
		t.Errorf("instances %+v", ins)
	}
	if f.Index() <= start {
		t.Errorf("index did not move")
	}
}

func TestWaitPassingTimeout(t *testing.T) {
	f := fake.NewConsul()
	defer f.Close()
	c, _ := consul.NewClient(f.URL(), "")
	f.Register(fake.Instance{ID: "a", Name: "web", Address: "127.0.0.1", Port: 9001, Status: fake.StatusPassing})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := consul.WaitPassing(ctx, c, "web", "", 3, time.Second)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `3 passing instances of "web" in Consul (1 seen)`) {
		t.Errorf("error = %v", err)
	}
}

func TestWaitPassingACL(t *testing.T) {
	f := fake.NewConsul()
	defer f.Close()
	f.Token = "tok"
	c, _ := consul.NewClient(f.URL(), "wrong-token-xyz")
	_, err := consul.WaitPassing(context.Background(), c, "web", "", 1, time.Second)
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("error = %v, want a 403", err)
	} else if strings.Contains(err.Error(), "wrong-token-xyz") {
		t.Errorf("error contains the token: %v", err)
	}
	c, _ = consul.NewClient(f.URL(), "tok")
	f.Register(fake.Instance{ID: "a", Name: "web", Address: "127.0.0.1", Port: 1, Status: fake.StatusPassing})
	if _, err := consul.WaitPassing(context.Background(), c, "web", "", 1, time.Second); err != nil {
		t.Error(err)
	}
}

func TestWaitPassingTag(t *testing.T) {
	f := fake.NewConsul()
	defer f.Close()
	c, _ := consul.NewClient(f.URL(), "")
	// A stale instance of an earlier trial does not count.
	f.Register(fake.Instance{ID: "old", Name: "web", Address: "127.0.0.1", Port: 1, Tags: []string{"trial-1"}, Status: fake.StatusPassing})
	f.Register(fake.Instance{ID: "new", Name: "web", Address: "127.0.0.1", Port: 2, Tags: []string{"trial-2"}, Status: fake.StatusPassing})
	ins, err := consul.WaitPassing(context.Background(), c, "web", "trial-2", 1, time.Second)
	if err != nil || len(ins) != 1 || ins[0].Port != 2 {
		t.Errorf("WaitPassing = %+v, %v", ins, err)
	}
}

func TestWaitGone(t *testing.T) {
	f := fake.NewConsul()
	defer f.Close()
	c, _ := consul.NewClient(f.URL(), "")
	f.Register(fake.Instance{ID: "a", Name: "web", Address: "127.0.0.1", Port: 1, Status: fake.StatusCritical})
	done := make(chan error, 1)
	go func() {
		_, err := consul.WaitGone(context.Background(), c, "web", 10*time.Second)
		done <- err
	}()
	f.Deregister("a")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	f.Register(fake.Instance{ID: "b", Name: "web", Address: "127.0.0.1", Port: 1, Status: fake.StatusPassing})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if n, err := consul.WaitGone(ctx, c, "web", time.Second); n != 1 || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitGone = %d, %v; want 1 left and a deadline error", n, err)
	}
}
