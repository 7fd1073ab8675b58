package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/load"
)

// serveOne runs one agent allowed to load allowed, and returns its URL and
// a channel that receives Serve's error when it returns (cancelled at
// cleanup).
func serveOne(t *testing.T, idle time.Duration, allowed ...string) (string, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ServeOptions{Listen: "127.0.0.1:0", Idle: idle, Token: testToken, Targets: allowed,
			Ready: func(a string) { ready <- a }, Logf: t.Logf})
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("Serve: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
	})
	return "http://" + addr, done
}

func send(t *testing.T, method, url, auth string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

// TestAgentRefusesWithoutToken: every endpoint, and a path that is none,
// answers 401 with a short body to a request without the token, with
// another token of the same length, a shorter or longer one, or the token
// in another scheme; none of them stops the agent or starts a load.
func TestAgentRefusesWithoutToken(t *testing.T) {
	url, done := serveOne(t, 30*time.Second, "http://127.0.0.1:1/")
	start, _ := json.Marshal(StartRequest{Options: load.Options{Targets: []load.Target{{URL: "http://127.0.0.1:1/"}}, Requests: 1},
		StartNS: time.Now().Add(time.Second).UnixNano()})
	wrong := []byte(testToken)
	wrong[3] ^= 1
	auths := map[string]string{
		"no token":       "",
		"wrong token":    "Bearer " + string(wrong),
		"shorter token":  "Bearer " + testToken[:len(testToken)-1],
		"longer token":   "Bearer " + testToken + "0",
		"empty token":    "Bearer ",
		"another scheme": "Basic " + testToken,
		"no scheme":      testToken,
	}
	endpoints := []struct {
		method, path string
		body         []byte
	}{
		{"GET", pathHello, nil}, {"GET", pathClock, nil}, {"POST", pathStart, start}, {"GET", pathResult, nil},
		{"GET", pathProgress, nil}, {"POST", pathStop, []byte("{}")}, {"GET", "/v1/nothing", nil}, {"GET", "/", nil},
	}
	for name, auth := range auths {
		for _, e := range endpoints {
			code, body := send(t, e.method, url+e.path, auth, e.body)
			if code != http.StatusUnauthorized || strings.TrimSpace(body) != "unauthorized" {
				t.Errorf("%s: %s %s: %d %q, want 401 \"unauthorized\"", name, e.method, e.path, code, body)
			}
		}
	}
	select {
	case err := <-done:
		t.Fatalf("the agent exited on requests without the token: %v", err)
	default:
	}
	// With the token it answers, and no load was started.
	if code, body := send(t, "GET", url+pathHello, "Bearer "+testToken, nil); code != http.StatusOK || !strings.Contains(body, `"protocol":1`) {
		t.Errorf("hello with the token: %d %s", code, body)
	}
	if code, body := send(t, "GET", url+pathResult, "Bearer "+testToken, nil); code != http.StatusConflict {
		t.Errorf("result with the token after refused starts: %d %s, want 409 (no load started)", code, body)
	}
}

// TestControllerWithWrongTokenIsRefused: a controller holding another
// run's token fails at once with a message that says so.
func TestControllerWithWrongTokenIsRefused(t *testing.T) {
	urls, tgt := startAgents(t, 0)
	_, err := Run(context.Background(), Config{Token: strings.Repeat("x", len(testToken)), Agents: urls,
		Options: loadOptions(tgt, 10)})
	if err == nil || !strings.Contains(err.Error(), "refused this run's token (401)") {
		t.Fatalf("Run with another token = %v, want refused", err)
	}
}

// TestServeRefusesWithoutSecret: an agent does not start without a token
// (unless Insecure) or without targets.
func TestServeRefusesWithoutSecret(t *testing.T) {
	for name, o := range map[string]ServeOptions{
		"no token":    {Targets: []string{"http://127.0.0.1:1/"}},
		"short token": {Token: "short", Targets: []string{"http://127.0.0.1:1/"}},
		"no target":   {Token: testToken},
		"bad target":  {Token: testToken, Targets: []string{"gopher://h/"}},
	} {
		o.Listen, o.Idle = "127.0.0.1:0", time.Second
		o.Ready = func(string) { t.Errorf("%s: the agent listened", name) }
		if err := Serve(context.Background(), o); err == nil {
			t.Errorf("%s: Serve = nil, want a refusal", name)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	err := Serve(ctx, ServeOptions{Listen: "127.0.0.1:0", Insecure: true, Targets: []string{"http://127.0.0.1:1/"},
		Ready: func(a string) {
			code, _ := send(t, "GET", "http://"+a+pathHello, "", nil)
			if code != http.StatusOK {
				t.Errorf("insecure agent: hello %d, want 200", code)
			}
			cancel()
		}})
	if err != nil {
		t.Errorf("insecure agent: %v", err)
	}
}

// TestAgentRefusesStarts: with the token, a start is still refused when it
// names a target the agent was not started for (a Unix socket among them),
// when its body is too large, or when any number is out of range; the
// refusal says why and no load runs.
func TestAgentRefusesStarts(t *testing.T) {
	allowed := "http://127.0.0.1:1/ok"
	sock := filepath.Join(t.TempDir(), "docker.sock")
	url, _ := serveOne(t, 30*time.Second, allowed)
	ok := func() StartRequest {
		return StartRequest{Options: load.Options{Targets: []load.Target{{URL: allowed}}, Connections: 1, Threads: 1, Requests: 1},
			StartNS: time.Now().Add(time.Second).UnixNano(), ToleranceNS: int64(50 * time.Millisecond)}
	}
	cases := []struct {
		name   string
		edit   func(*StartRequest)
		code   int
		reason string
	}{
		{"other target", func(r *StartRequest) { r.Options.Targets[0].URL = "http://127.0.0.1:2/ok" }, 403, "target 1 (http://127.0.0.1:2/ok) is not one this agent was started for"},
		{"other path", func(r *StartRequest) { r.Options.Targets[0].URL = allowed + "/more" }, 403, "not one this agent was started for"},
		{"second target", func(r *StartRequest) {
			r.Options.Targets = append(r.Options.Targets, load.Target{URL: "https://10.0.0.1/"})
		}, 403, "target 2"},
		{"unix socket", func(r *StartRequest) { r.Options.Targets[0].URL = "unix:" + sock + ":/containers/x/stop" }, 403, "Unix socket target 1"},
		{"credentials redacted", func(r *StartRequest) { r.Options.Targets[0].URL = "http://u:hunter2@127.0.0.1:1/ok" }, 403, "(sensitive)"},
		{"interval 1ns", func(r *StartRequest) { r.Options.Interval = 1 }, 400, "interval 1ns"},
		{"rate 1e-12", func(r *StartRequest) { r.Options.Rate = 1e-12 }, 400, "rate 1e-12"},
		{"rate huge", func(r *StartRequest) { r.Options.Rate = 1e300 }, 400, "rate 1e+300"},
		{"connections", func(r *StartRequest) { r.Options.Connections = 2_000_000 }, 400, "connections 2000000"},
		{"negative connections", func(r *StartRequest) { r.Options.Connections = -1 }, 400, "connections -1"},
		{"threads", func(r *StartRequest) { r.Options.Threads = 5000; r.Options.Connections = 5000 }, 400, "threads 5000"},
		{"requests", func(r *StartRequest) { r.Options.Requests = -5 }, 400, "requests -5"},
		{"duration", func(r *StartRequest) { r.Options.Duration = -1 }, 400, "duration -1ns"},
		{"long duration", func(r *StartRequest) { r.Options.Duration = 1000 * time.Hour }, 400, "duration 1000h0m0s: must be at most 168h0m0s"},
		{"timeout", func(r *StartRequest) { r.Options.Timeout = 1000 * time.Hour }, 400, "timeout 1000h0m0s"},
		{"busy poll", func(r *StartRequest) { r.Options.BusyPoll = time.Second }, 400, "busy_poll 1s"},
		{"nap", func(r *StartRequest) { r.Options.Nap = time.Millisecond }, 400, "nap 1ms: naps need protocol"},
		{"weight", func(r *StartRequest) { r.Options.Targets[0].Weight = -1 }, 400, "weight = -1"},
		{"engine", func(r *StartRequest) { r.Options.Engine = "x" }, 400, "engine x"},
		{"tolerance", func(r *StartRequest) { r.ToleranceNS = int64(time.Hour) }, 400, "tolerance 1h0m0s"},
		{"negative tolerance", func(r *StartRequest) { r.ToleranceNS = -1 }, 400, "tolerance -1ns"},
		{"start far ahead", func(r *StartRequest) { r.StartNS = time.Now().Add(time.Hour).UnixNano() }, 400, "ahead: at most 5m0s"},
		{"index", func(r *StartRequest) { r.Index = -1 }, 400, "index -1"},
		{"oversized body", func(r *StartRequest) { r.Options.Targets[0].Body = make([]byte, MaxStartBody) }, 413, "more than 33554432 bytes"},
	}
	for _, tc := range cases {
		r := ok()
		tc.edit(&r)
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		code, body := send(t, "POST", url+pathStart, "Bearer "+testToken, b)
		if code != tc.code || !strings.Contains(body, tc.reason) {
			t.Errorf("%s: %d %s, want %d saying %q", tc.name, code, strings.TrimSpace(body), tc.code, tc.reason)
		}
		if strings.Contains(body, "hunter2") {
			t.Errorf("%s: the refusal shows the target's password: %s", tc.name, body)
		}
	}
	// Nothing was started: the result says so, and the allowed start is
	// accepted.
	if code, body := send(t, "GET", url+pathResult, "Bearer "+testToken, nil); code != http.StatusConflict {
		t.Errorf("result after refused starts: %d %s, want 409", code, body)
	}
	b, _ := json.Marshal(ok())
	if code, body := send(t, "POST", url+pathStart, "Bearer "+testToken, b); code != http.StatusOK {
		t.Errorf("the allowed start: %d %s", code, body)
	}
}

// TestSlowBodyDoesNotKeepAgentAlive: a start whose body arrives a byte at
// a time (with the token) is cut off by the read timeout, and the agent
// then exits after its idle timeout while the sender still sends.
func TestSlowBodyDoesNotKeepAgentAlive(t *testing.T) {
	url, done := serveOne(t, time.Second, "http://127.0.0.1:1/")
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: agent\r\nAuthorization: Bearer %s\r\nContent-Length: 100000\r\n\r\n", pathStart, testToken)
	limit := time.After(60 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return // exited while the body was still trickling in
		case <-limit:
			t.Fatal("the agent still runs after 60s of a slowly sent body (idle timeout 1s)")
		case <-tick.C:
			_, _ = conn.Write([]byte(" "))
		}
	}
}

// TestRefusedRequestsAreNotPresence: requests without the token do not
// count as a controller: the agent exits after its idle timeout while
// they keep coming.
func TestRefusedRequestsAreNotPresence(t *testing.T) {
	url, done := serveOne(t, time.Second, "http://127.0.0.1:1/")
	limit := time.After(60 * time.Second)
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return
		case <-limit:
			t.Fatal("the agent still runs after 60s of refused requests (idle timeout 1s)")
		default:
		}
		req, _ := http.NewRequest("GET", url+pathHello, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReadTokenFile: a token file others may read is refused.
func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "token")
	if err := os.WriteFile(p, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadTokenFile(p); err != nil || got != testToken {
		t.Errorf("ReadTokenFile = %q, %v", got, err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTokenFile(p); err == nil || !strings.Contains(err.Error(), "want 0600") {
		t.Errorf("a 0644 token file: %v, want refused", err)
	}
	if _, err := ReadTokenFile(dir); err == nil {
		t.Error("a folder as the token file was accepted")
	}
}

func loadOptions(tgt string, requests int64) load.Options {
	return load.Options{Targets: []load.Target{{URL: tgt}}, Connections: 1, Threads: 1, Requests: requests}
}
