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

// TestWaitRouteNoNodeYet: while APISIX's Consul discovery holds no node
// for the route's service (it has not fetched them yet, or it is backing
// off after Consul was unreachable), APISIX 3.9.1 answers nginx's HTML
// "503 Service Temporarily Unavailable" page; the error quotes its title,
// not the HTML.
func TestWaitRouteNoNodeYet(t *testing.T) {
	f := fake.NewAPISIX("k", nil)
	defer f.Close()
	c, _ := apisix.New(f.AdminURL(), "k", nil)
	ctx := context.Background()
	if err := c.PutUpstream(ctx, &apisix.Upstream{ID: "u", ServiceName: "web", DiscoveryType: "consul"}); err != nil {
		t.Fatal(err)
	}
	if err := c.PutRoute(ctx, &apisix.Route{ID: "r", URI: "/*", UpstreamID: "u"}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	err := apisix.WaitRoute(wctx, nil, f.GatewayURL()+"/", 10*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "(last answer HTTP 503: 503 Service Temporarily Unavailable)") ||
		strings.Contains(err.Error(), "<") {
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

// TestDeleteInUse: APISIX refuses to delete an upstream a route (in its
// lagging route cache) still uses; the error wraps ErrInUse, and
// DeleteForce skips the check.
func TestDeleteInUse(t *testing.T) {
	f := fake.NewAPISIX("k", nil)
	defer f.Close()
	f.RouteCacheLag = time.Hour // the route stays in the cache after its DELETE
	c, _ := apisix.New(f.AdminURL(), "k", nil)
	ctx := context.Background()
	if err := c.PutUpstream(ctx, &apisix.Upstream{ID: "u", Nodes: []apisix.Node{{Host: "127.0.0.1", Port: 1, Weight: 1}}}); err != nil {
		t.Fatal(err)
	}
	if err := c.PutRoute(ctx, &apisix.Route{ID: "r", URI: "/*", UpstreamID: "u"}); err != nil {
		t.Fatal(err)
	}
	f.RouteCacheLag = 0 // the cache has the route now
	if err := c.Delete(ctx, apisix.KindRoutes, "r"); err != nil {
		t.Fatal(err)
	}
	f.RouteCacheLag = time.Hour // and keeps it after the DELETE
	err := c.Delete(ctx, apisix.KindUpstreams, "u")
	if !errors.Is(err, apisix.ErrInUse) || !strings.Contains(err.Error(), "route [r] is still using it now") {
		t.Fatalf("Delete = %v, want ErrInUse", err)
	}
	if err := c.DeleteForce(ctx, apisix.KindUpstreams, "u"); err != nil {
		t.Fatalf("DeleteForce: %v", err)
	}
	if ups := f.Upstreams(); len(ups) != 0 {
		t.Errorf("upstreams left: %v", ups)
	}
}

// TestWaitDiscovered reads the control API's Consul discovery dump and
// waits until it holds exactly the wanted nodes.
func TestWaitDiscovered(t *testing.T) {
	c := fake.NewConsul()
	defer c.Close()
	f := fake.NewAPISIX("k", c)
	defer f.Close()
	f.DiscoveryLag = 0 // the dump follows Consul at once here
	c.Register(fake.Instance{ID: "a", Name: "web", Address: "127.0.0.1", Port: 8001, Status: fake.StatusPassing})
	// A service the discovery holds nothing of: ErrNoneDiscovered.
	nctx, ncancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer ncancel()
	if err := apisix.WaitDiscovered(nctx, nil, f.ControlURL(), "api", []string{"127.0.0.1:8003"}, 20*time.Millisecond); !errors.Is(err, apisix.ErrNoneDiscovered) {
		t.Errorf("WaitDiscovered of an unknown service = %v, want ErrNoneDiscovered", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := apisix.WaitDiscovered(ctx, nil, f.ControlURL(), "web", []string{"127.0.0.1:8001", "127.0.0.1:8002"}, 20*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "its Consul discovery holds 1 (127.0.0.1:8001)") {
		t.Fatalf("WaitDiscovered = %v, want the nodes APISIX holds", err)
	}
	c.Register(fake.Instance{ID: "b", Name: "web", Address: "127.0.0.1", Port: 8002, Status: fake.StatusPassing})
	if err := apisix.WaitDiscovered(context.Background(), nil, f.ControlURL(), "web", []string{"127.0.0.1:8002", "127.0.0.1:8001"}, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// Nothing listens: the error says what failed.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	err = apisix.WaitDiscovered(ctx2, nil, "http://127.0.0.1:1", "web", []string{"127.0.0.1:8001"}, 20*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "reading APISIX's discovery dump") {
		t.Errorf("WaitDiscovered without a control API = %v", err)
	}
}

// TestVersion: the version comes from the admin API's Server header, with
// the right key or not (APISIX sets the header before checking it), and is
// "" when server tokens are off.
func TestVersion(t *testing.T) {
	f := fake.NewAPISIX("key", nil)
	defer f.Close()
	f.Version = "3.9.1"
	for _, key := range []string{"key", "wrong"} {
		c, err := apisix.New(f.AdminURL(), key, nil)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := c.Version(context.Background()); err != nil || v != "3.9.1" {
			t.Errorf("key %q: Version = %q, %v; want 3.9.1", key, v, err)
		}
	}
	f.ServerTokensOff = true
	c, _ := apisix.New(f.AdminURL(), "key", nil)
	if v, err := c.Version(context.Background()); err != nil || v != "" {
		t.Errorf("server tokens off: Version = %q, %v; want \"\"", v, err)
	}
	for in, want := range map[string]string{"APISIX/3.9.1": "3.9.1", "APISIX": "", "nginx": "", "openresty/1.21.4.2": "", " APISIX/3.10.0 ": "3.10.0"} {
		if got := apisix.ServerVersion(in); got != want {
			t.Errorf("ServerVersion(%q) = %q, want %q", in, got, want)
		}
	}
}
