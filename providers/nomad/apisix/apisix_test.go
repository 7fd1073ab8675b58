package apisix_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/benchflow/benchflow/providers/nomad/apisix"
	"github.com/benchflow/benchflow/providers/nomad/fake"
)

func TestClientRoundTrip(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("backend " + r.URL.Path))
	}))
	defer backend.Close()
	f := fake.NewAPISIX("k", nil)
	defer f.Close()
	c, err := apisix.New(f.AdminURL(), "k", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	host, port := splitHostPort(t, backend.URL)
	if err := c.PutUpstream(ctx, &apisix.Upstream{ID: "u", Type: "roundrobin",
		Nodes: []apisix.Node{{Host: host, Port: port, Weight: 1}}, Labels: map[string]string{"a": "b"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.PutRoute(ctx, &apisix.Route{ID: "r", URI: "/api/*", UpstreamID: "u"}); err != nil {
		t.Fatal(err)
	}
	it, err := c.Get(ctx, apisix.KindRoutes, "r")
	if err != nil || it.Key != "/apisix/routes/r" || it.ID() != "r" {
		t.Fatalf("Get = %+v, %v", it, err)
	}
	items, err := c.List(ctx, apisix.KindUpstreams)
	if err != nil || len(items) != 1 || items[0].Labels()["a"] != "b" {
		t.Fatalf("List = %+v, %v", items, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := apisix.WaitRoute(wctx, nil, f.GatewayURL()+"/api/x", 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, apisix.KindRoutes, "r"); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, apisix.KindRoutes, "r"); !errors.Is(err, apisix.ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
	if _, err := c.Get(ctx, apisix.KindRoutes, "r"); !errors.Is(err, apisix.ErrNotFound) || !strings.Contains(err.Error(), "Key not found") {
		t.Errorf("get deleted: %v", err)
	}
	if err := c.PutRoute(ctx, &apisix.Route{ID: "bad id!", URI: "/"}); err == nil || !strings.Contains(err.Error(), "invalid id") {
		t.Errorf("bad id: %v", err)
	}
}

func TestClientWrongKeyNotPrinted(t *testing.T) {
	f := fake.NewAPISIX("right", nil)
	defer f.Close()
	const key = "wrong-key-do-not-print"
	c, _ := apisix.New(f.AdminURL(), key, nil)
	err := c.PutUpstream(context.Background(), &apisix.Upstream{ID: "u", Nodes: []apisix.Node{{Host: "127.0.0.1", Port: 1}}})
	if !errors.Is(err, apisix.ErrUnauthorized) || !strings.Contains(err.Error(), "failed to check token") {
		t.Fatalf("error = %v", err)
	}
	if strings.Contains(err.Error(), key) || strings.Contains(c.String(), key) {
		t.Errorf("key printed: %v / %s", err, c)
	}
}

func TestWaitRouteGivesUp(t *testing.T) {
	f := fake.NewAPISIX("k", nil)
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := apisix.WaitRoute(ctx, nil, f.GatewayURL()+"/", 10*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "(last answer HTTP 404: 404 Route Not Found)") {
		t.Errorf("error = %v", err)
	}
}

func TestNewRejectsBadURL(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:9180", "ftp://x", "http://"} {
		if _, err := apisix.New(u, "k", nil); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
}

func splitHostPort(t *testing.T, u string) (string, int) {
	t.Helper()
	hp := strings.TrimPrefix(u, "http://")
	i := strings.LastIndexByte(hp, ':')
	var p int
	for _, c := range hp[i+1:] {
		p = p*10 + int(c-'0')
	}
	return hp[:i], p
}
