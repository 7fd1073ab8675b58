package script_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/measure"
	"github.com/benchflow/benchflow/engine/starconf/script"
)

func loadScript(t *testing.T, src string, base string) (*script.Script, *bytes.Buffer) {
	t.Helper()
	var out bytes.Buffer
	s, err := script.LoadSource(context.Background(), "requests.star", []byte(src), base, script.Options{Print: &out, MaxSteps: 1_000_000})
	if err != nil {
		t.Fatal(err)
	}
	return s, &out
}

func TestPoolRotatesOverDistinctPaths(t *testing.T) {
	s, _ := loadScript(t, `
pool_size = 1000
def request(i):
    return {"path": "/item/%d" % i}
`, "http://127.0.0.1:8080/")
	pool, err := s.Pool()
	if err != nil {
		t.Fatal(err)
	}
	if len(pool) != 1000 {
		t.Fatalf("pool has %d targets, want 1000", len(pool))
	}
	for i, tg := range pool {
		if want := fmt.Sprintf("http://127.0.0.1:8080/item/%d", i); tg.URL != want || tg.Method != "GET" || tg.Weight != 1 {
			t.Fatalf("target %d = %+v, want GET %s weight 1", i, tg, want)
		}
	}
}

func TestPoolDeduplicatesIntoWeights(t *testing.T) {
	s, _ := loadScript(t, `
pool_size = 100
state = {"n": 0}
def request():
    state["n"] += 1
    if state["n"] % 4 == 0:
        return struct(method = "post", path = "/write", body = "x=1", headers = [("Content-Type", "text/plain")])
    return "/read"
`, "http://h:1")
	pool, err := s.Pool()
	if err != nil {
		t.Fatal(err)
	}
	if len(pool) != 2 {
		t.Fatalf("pool = %+v, want 2 distinct targets", pool)
	}
	read, write := pool[0], pool[1]
	if read.URL != "http://h:1/read" || read.Weight != 75 {
		t.Errorf("read = %+v, want http://h:1/read weight 75", read)
	}
	if write.URL != "http://h:1/write" || write.Weight != 25 || write.Method != "POST" || string(write.Body) != "x=1" ||
		len(write.Headers) != 1 || write.Headers[0] != [2]string{"Content-Type", "text/plain"} {
		t.Errorf("write = %+v", write)
	}
}

func TestRequestFields(t *testing.T) {
	s, _ := loadScript(t, `
pool_size = 1
def request():
    return {"url": "http://other:9/x?y=1", "method": "PUT", "headers": {"X-A": "1", "X-B": "2"}, "body": b"\x00\x01", "weight": 3}
`, "")
	pool, err := s.Pool()
	if err != nil {
		t.Fatal(err)
	}
	tg := pool[0]
	if tg.URL != "http://other:9/x?y=1" || tg.Method != "PUT" || tg.Weight != 3 || !bytes.Equal(tg.Body, []byte{0, 1}) || len(tg.Headers) != 2 {
		t.Errorf("target = %+v", tg)
	}
}

func TestScriptErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, base, want string }{
		{"no request", "x = 1\n", "http://h", "defines no request() function"},
		{"request not a function", "request = 1\n", "http://h", "request must be a function"},
		{"request arity", "def request(a, b):\n    return '/'\n", "http://h", "request() takes 2 parameters; want 0 or 1"},
		{"response arity", "def request():\n    return '/'\ndef response(s):\n    pass\n", "http://h", "response() takes 1 parameters; want 3"},
		{"syntax", "def request(:\n", "http://h", "requests.star:1:14"},
		{"load", "load('x.star', 'y')\ndef request():\n    return '/'\n", "http://h", "load() is not available"},
		{"pool size", "pool_size = 0\ndef request():\n    return '/'\n", "http://h", "pool_size must be an int between 1 and"},
		{"bad base", "def request():\n    return '/'\n", "127.0.0.1:80", "has no scheme"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := script.LoadSource(context.Background(), "requests.star", []byte(tc.src), tc.base, script.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestPoolErrors(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"runtime error with location", "    return {'path': '/%d' % (1 // (i - 2))}", "requests.star:3:"},
		{"unknown field", "    return {'paht': '/'}", `unknown request field "paht"`},
		{"not a dict", "    return 42", "must return a dict, a struct or a path string, not int"},
		{"relative path", "    return 'x'", `path "x" must start with /`},
		{"path and url", "    return {'path': '/', 'url': 'http://h/'}", "path or url, not both"},
		{"bad headers", "    return {'path': '/', 'headers': {'A': 1}}", "headers must map strings to strings"},
		{"endless", "    while True:\n        pass", "too many steps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "pool_size = 5\ndef request(i):\n" + tc.body + "\n"
			s, _ := loadScript(t, src, "http://127.0.0.1:1")
			_, err := s.Pool()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestHooks(t *testing.T) {
	s, out := loadScript(t, `
seen = {}
def request():
    return "/"
def response(status, headers, body):
    seen[status] = seen.get(status, 0) + 1
    if headers.get("content-type") != "text/plain" or body != b"ok":
        fail("unexpected response", headers, body)
def done(summary):
    print("requests=%d errors=%d p99=%d status=%s seen=%s" % (
        summary["requests"], summary["errors"], summary["latency_us"]["p99"], summary["status"], seen))
`, "http://h")
	if !s.HasResponse() {
		t.Fatal("HasResponse = false")
	}
	for i := 0; i < 3; i++ {
		if err := s.Response(200, [][2]string{{"Content-Type", "text/plain"}}, []byte("ok")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Response(500, [][2]string{{"Content-Type", "text/html"}}, []byte("no")); err == nil || !strings.Contains(err.Error(), "unexpected response") {
		t.Fatalf("a failing response() must report its error, got %v", err)
	}
	h := hdrhistogram.New(1, 1_000_000, 3)
	for i := 0; i < 100; i++ {
		_ = h.RecordValue(int64(100 + i))
	}
	res := &measure.Record{Requests: 100, Errors: 1, Duration: time.Second, Latency: h, Status: map[int]int64{200: 99, 500: 1}}
	if err := s.Done(res); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("requests=100 errors=1 p99=%d status={200: 99, 500: 1} seen={200: 3, 500: 1}\n", h.ValueAtQuantile(99))
	if got := out.String(); got != want {
		t.Errorf("done printed %q, want %q", got, want)
	}
}

func TestNewRequesterReadsFromFS(t *testing.T) {
	fsys := fstest.MapFS{"scripts/r.star": {Data: []byte("pool_size = 3\ndef request(i):\n    return '/p%d' % i\n")}}
	r, err := script.NewRequester(fsys, "scripts/r.star", "http://127.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := r.Pool()
	if err != nil || len(pool) != 3 || pool[2].URL != "http://127.0.0.1:9/p2" {
		t.Fatalf("pool = %+v, %v", pool, err)
	}
	if _, err := script.NewRequester(fsys, "missing.star", "http://h"); err == nil || !strings.Contains(err.Error(), "reading request script") {
		t.Fatalf("missing script: %v", err)
	}
	for _, bad := range []string{"../r.star", "/etc/r.star", "scripts/../../r.star"} {
		if _, err := script.NewRequester(fsys, bad, "http://h"); err == nil || !strings.Contains(err.Error(), "inside the pipeline's folder") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// TestLoadSendsScriptedRequests drives a real (bounded) load on loopback
// and checks the server saw the scripted paths and methods.
func TestLoadSendsScriptedRequests(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Method+" "+r.URL.Path]++
		mu.Unlock()
	}))
	defer srv.Close()
	s, _ := loadScript(t, `
pool_size = 50
def request(i):
    if i % 10 == 0:
        return {"method": "POST", "path": "/form", "body": "n=%d" % i}
    return "/page/%d" % (i % 10)
`, srv.URL)
	res, err := load.Run(context.Background(), load.Options{
		Requester: s, Connections: 4, Threads: 1, Requests: 2000, Duration: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 2000 || res.Errors != 0 {
		t.Fatalf("requests %d errors %d, want 2000 and 0", res.Requests, res.Errors)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 10 {
		t.Errorf("server saw %d distinct requests, want 10: %v", len(seen), seen)
	}
	for k := range seen {
		if k != "POST /form" && !strings.HasPrefix(k, "GET /page/") {
			t.Errorf("unexpected request %q", k)
		}
	}
	if seen["POST /form"] == 0 {
		t.Error("no POST /form was sent")
	}
}

// TestResponseHookSeesEveryResponse runs a bounded load whose
// OnResponse is the script's response(): it must be called once per
// response, with the statuses the server sent.
func TestResponseHookSeesEveryResponse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	s, out := loadScript(t, `
seen = {}
def request(i):
    return "/missing" if i % 4 == 0 else "/"
def response(status, headers, body):
    seen[status] = seen.get(status, 0) + 1
def done(summary):
    total = 0
    for n in seen.values():
        total += n
    print(sorted(seen.items()), total == summary["requests"], seen.get(404, 0) == summary["status"].get(404, 0))
`, srv.URL)
	hook := s.ResponseHook()
	if hook == nil {
		t.Fatal("ResponseHook is nil for a script with response()")
	}
	res, err := load.Run(context.Background(), load.Options{
		Requester: s, OnResponse: hook, Connections: 4, Threads: 2, Requests: 1000, Duration: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Done(res); err != nil {
		t.Fatal(err)
	}
	if res.Requests != 1000 || res.Status[404] == 0 || res.Status[200] == 0 {
		t.Fatalf("requests %d, statuses %v", res.Requests, res.Status)
	}
	want := fmt.Sprintf("[(200, %d), (404, %d)] True True\n", res.Status[200], res.Status[404])
	if got := out.String(); got != want {
		t.Errorf("done printed %q, want %q", got, want)
	}
}

func TestResponseHookStopsAtFirstError(t *testing.T) {
	s, _ := loadScript(t, `
calls = {"n": 0}
def request():
    return "/"
def response(status, headers, body):
    calls["n"] += 1
    if status != 200:
        fail("status %d after %d calls" % (status, calls["n"]))
`, "http://h")
	hook := s.ResponseHook()
	for _, st := range []int{200, 500, 503, 200} {
		hook(st)
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "status 500 after 2 calls") {
		t.Fatalf("Err() = %v, want the first failure", err)
	}
	noHook, _ := loadScript(t, "def request():\n    return '/'\n", "http://h")
	if noHook.ResponseHook() != nil {
		t.Error("ResponseHook must be nil without response()")
	}
}

// h2cServer is an HTTP/2 server with prior knowledge (h2c) that records
// every request as "PROTO METHOD PATH BODY X-Seq".
func h2cServer(t *testing.T) (url string, seen func() []string) {
	t.Helper()
	var mu sync.Mutex
	var got []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, fmt.Sprintf("%s %s %s %s %s", r.Proto, r.Method, r.URL.Path, body, r.Header.Get("X-Seq")))
		mu.Unlock()
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// TestScriptOverH2 runs a request script over h2c: the server receives
// the methods, paths, bodies and headers the script built, as HTTP/2, and
// the response hook sees every response.
func TestScriptOverH2(t *testing.T) {
	url, seen := h2cServer(t)
	s, out := loadScript(t, `
pool_size = 4
statuses = {}
def request(i):
    if i % 2 == 0:
        return {"method": "POST", "path": "/form/%d" % i, "body": "n=%d" % i, "headers": {"X-Seq": str(i)}}
    return {"path": "/page/%d" % i, "headers": {"X-Seq": str(i)}}
def response(status, headers, body):
    statuses[status] = statuses.get(status, 0) + 1
def done(summary):
    print(statuses, summary["requests"])
`, url)
	res, err := load.Run(context.Background(), load.Options{
		Requester: s, OnResponse: s.ResponseHook(), Protocol: measure.ProtoH2, Streams: 4,
		Connections: 2, Threads: 1, Requests: 40, Duration: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Done(res); err != nil {
		t.Fatal(err)
	}
	if res.Requests != 40 || res.Errors != 0 || res.Protocol != measure.ProtoH2C {
		t.Fatalf("requests %d errors %d protocol %q, want 40, 0, h2c", res.Requests, res.Errors, res.Protocol)
	}
	count := map[string]int{}
	for _, r := range seen() {
		count[r]++
	}
	want := []string{"HTTP/2.0 POST /form/0 n=0 0", "HTTP/2.0 GET /page/1  1", "HTTP/2.0 POST /form/2 n=2 2", "HTTP/2.0 GET /page/3  3"}
	total := 0
	for _, w := range want {
		if count[w] == 0 {
			t.Errorf("the server never received %q; it received %v", w, count)
		}
		total += count[w]
	}
	if total != 40 || len(count) != len(want) {
		t.Errorf("the server received %v, want 40 requests of %q", count, want)
	}
	if got := out.String(); got != "{200: 40} 40\n" {
		t.Errorf("done printed %q, want the 40 responses seen by response()", got)
	}
}

// TestScriptOverH2OneEndpoint: an HTTP/2 slot is one connection, so a
// script whose requests go to two servers is refused, naming both.
func TestScriptOverH2OneEndpoint(t *testing.T) {
	url, _ := h2cServer(t)
	other, _ := h2cServer(t)
	s, _ := loadScript(t, fmt.Sprintf(`
def request(i):
    return "/" if i %% 2 else {"url": %q}
`, other+"/elsewhere"), url)
	_, err := load.Run(context.Background(), load.Options{Requester: s, Protocol: measure.ProtoH2, Connections: 1, Requests: 4})
	if err == nil || !strings.Contains(err.Error(), "the request script's requests go to more than one scheme, host and port") ||
		!strings.Contains(err.Error(), other+"/elsewhere") {
		t.Fatalf("err %v, want the two endpoints named", err)
	}
}
