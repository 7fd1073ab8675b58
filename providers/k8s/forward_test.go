package k8s

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
	"k8s.io/client-go/rest"
)

// portForwardServer plays the API server's pods/portforward endpoint on
// loopback, following the kubelet's documented protocol: WebSocket
// upgrades are refused (an older server), so the client falls back to
// SPDY; per forwarded connection the client opens an "error" stream and a
// "data" stream with the same requestID and port headers, and the server
// connects the data stream to the pod's port (here: target) and closes the
// error stream when done.
type portForwardServer struct {
	target string // host:port the "pod" port is served on

	mu    sync.Mutex
	paths []string
	errs  map[string]httpstream.Stream
}

func (s *portForwardServer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	s.mu.Lock()
	s.paths = append(s.paths, req.Method+" "+req.URL.Path)
	s.mu.Unlock()
	if strings.EqualFold(req.Header.Get("Upgrade"), "websocket") {
		http.Error(w, "websocket not supported here", http.StatusBadRequest)
		return
	}
	if _, err := httpstream.Handshake(req, w, []string{"portforward.k8s.io"}); err != nil {
		return
	}
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, req, func(st httpstream.Stream, replySent <-chan struct{}) error {
		id := st.Headers().Get(corev1.PortForwardRequestIDHeader)
		switch st.Headers().Get(corev1.StreamType) {
		case corev1.StreamTypeError:
			s.mu.Lock()
			s.errs[id] = st
			s.mu.Unlock()
		case corev1.StreamTypeData:
			go s.pipe(st, id, replySent)
		}
		return nil
	})
	if conn != nil {
		<-conn.CloseChan()
	}
}

func (s *portForwardServer) pipe(st httpstream.Stream, id string, replySent <-chan struct{}) {
	<-replySent
	defer func() {
		s.mu.Lock()
		if e := s.errs[id]; e != nil {
			e.Close()
		}
		s.mu.Unlock()
		st.Close()
	}()
	c, err := net.Dial("tcp", s.target)
	if err != nil {
		return
	}
	defer c.Close()
	go io.Copy(c, st)
	io.Copy(st, c)
}

// TestPortForward opens a real client-go port-forward (the code path of
// expose = "port-forward") through a loopback stand-in of the API server
// and fetches a page through it.
func TestPortForward(t *testing.T) {
	pod := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from the pod")
	}))
	defer pod.Close()
	pfs := &portForwardServer{target: pod.Listener.Addr().String(), errs: map[string]httpstream.Stream{}}
	api := httptest.NewServer(pfs)
	defer api.Close()

	rc := &rest.Config{Host: api.URL}
	cs, err := NewClient(rc)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New("cluster", Config{})
	if err != nil {
		t.Fatal(err)
	}
	p.client, p.rest, p.key = cs, rc, rc.Host

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, err := p.portForward(ctx, "bench", "nginx-0", []string{"0:80"})
	if err != nil {
		t.Fatal(err)
	}
	local := f.Ports()[80]
	if local == 0 {
		f.Close()
		t.Fatalf("Ports() = %v, want a local port for 80", f.Ports())
	}
	url := "http://127.0.0.1:" + strconv.Itoa(local) + "/"
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for i := 0; i < 3; i++ {
		resp, err := client.Get(url)
		if err != nil {
			f.Close()
			t.Fatalf("GET %s through the forward: %v", url, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "hello from the pod" {
			t.Errorf("body %q", body)
		}
	}
	f.Close()
	if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(local)); err == nil {
		c.Close()
		t.Error("the local port still accepts connections after Close")
	}
	pfs.mu.Lock()
	defer pfs.mu.Unlock()
	if len(pfs.paths) == 0 || !strings.HasSuffix(pfs.paths[len(pfs.paths)-1], "/api/v1/namespaces/bench/pods/nginx-0/portforward") ||
		!strings.HasPrefix(pfs.paths[len(pfs.paths)-1], "POST ") {
		t.Errorf("requests to the API server: %v", pfs.paths)
	}
}

func TestPortForwardNeedsRESTConfig(t *testing.T) {
	s := newSim(t, podsReady)
	p, err := NewWithClient(clientFor(s.cs), "cluster", Config{})
	if err != nil {
		t.Fatal(err)
	}
	p.pollInterval = 5 * time.Millisecond
	_, err = p.Provision(context.Background(), nginxRequest(t))
	if err == nil || !strings.Contains(err.Error(), "port-forward needs a REST config") {
		t.Fatalf("err = %v", err)
	}
	assertNoLeftovers(t, s.cs)
}

// TestPortForwardRefused checks that a port-forward the API server refuses
// fails with the server's answer instead of hanging.
func TestPortForwardRefused(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `pods "nginx-0" is forbidden: cannot create resource "pods/portforward"`, http.StatusForbidden)
	}))
	defer api.Close()
	rc := &rest.Config{Host: api.URL}
	cs, err := NewClient(rc)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New("cluster", Config{})
	if err != nil {
		t.Fatal(err)
	}
	p.client, p.rest, p.key = cs, rc, rc.Host
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, err := p.portForward(ctx, "bench", "nginx-0", []string{"0:80"})
	if err == nil {
		f.Close()
		t.Fatal("a refused port-forward succeeded")
	}
	t.Logf("the error reads: %v", err)
	if !strings.Contains(err.Error(), "forbidden") && !strings.Contains(err.Error(), "403") {
		t.Errorf("error does not quote the refusal: %v", err)
	}
}
