package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestParseCheck(t *testing.T) {
	for _, s := range []string{"status==200", "status != 500", "status<400", "size==4096", "size>0", "body contains ok", "body contains two words", "header Content-Type ~ json", "header X-A ~ ^a+$"} {
		if _, err := ParseCheck(s); err != nil {
			t.Errorf("ParseCheck(%q): %v", s, err)
		}
	}
	for s, want := range map[string]string{
		"":                        "empty check",
		"status=200":              "no comparison after status",
		"status==20":              "not a status code",
		"size==-1":                "not a byte count",
		"body has x":              "body contains TEXT",
		"body contains ":          "body contains TEXT",
		"header Content-Type":     "header NAME ~ REGEXP",
		"header Content-Type ~ (": "REGEXP: error parsing regexp",
		"latency<10ms":            "want status==200",
	} {
		if _, err := ParseCheck(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseCheck(%q) error = %v, want %q", s, err, want)
		}
	}
	for _, p := range []string{ProtoH2, ProtoH3} {
		u := "http://127.0.0.1:1/"
		if p == ProtoH3 {
			u = "https://127.0.0.1:1/"
		}
		if fe := (Options{Targets: []Target{{URL: u}}, Checks: []string{"status==200"}, Protocol: p}).Validate(); fe != nil {
			t.Errorf("checks over %s: %v, want them accepted", p, fe)
		}
	}
}

// TestCheckAcrossReads feeds responses to the parser one byte at a time
// (and whole): a body text split over any two reads is found, the size
// is the decoded body's, and chunk framing is not body.
func TestCheckAcrossReads(t *testing.T) {
	body := strings.Repeat("x", 100) + "NEEDLE" + strings.Repeat("y", 50)
	length := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 156\r\n\r\n" + body
	chunked := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n67\r\n" + body[:103] + "\r\n35\r\n" + body[103:] + "\r\n0\r\n\r\n"
	for name, resp := range map[string]string{"length": length, "chunked": chunked} {
		for _, c := range []struct {
			check string
			ok    bool
		}{
			{"body contains NEEDLE", true}, {"body contains NEEDLES", false}, {"size==156", true}, {"size>156", false},
			{"status==200", true}, {"status==404", false},
			{"header Content-TYPE ~ json", name == "length"}, {"header X-Missing ~ .", false},
		} {
			checks, err := parseChecks([]string{c.check})
			if err != nil {
				t.Fatal(err)
			}
			for _, step := range []int{1, len(resp)} {
				p := parser{chk: newCheckState(checks)}
				p.begin(false)
				var buf []byte
				done := false
				for i := 0; i < len(resp) && !done; i += step {
					buf = append(buf, resp[i:min(i+step, len(resp))]...)
					used, d, err := p.feed(buf)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					buf, done = buf[used:], d
				}
				if !done {
					t.Fatalf("%s, %d bytes a read: the response did not complete", name, step)
				}
				if got := p.resp.checkErr == nil; got != c.ok {
					t.Errorf("%s, %d bytes a read: %q passed = %v (%v), want %v", name, step, c.check, got, p.resp.checkErr, c.ok)
				}
			}
		}
	}
}

// TestChecksAgainstServer: a server that answers 200 with an error page
// fails the body and header checks it should, every such response is a
// "check" error (counted, never a request), and the good answers pass.
// Run under each engine with BENCHFLOW_LOAD_ENGINE.
func TestChecksAgainstServer(t *testing.T) {
	good := strings.Repeat("{}", 2048) // 4096 bytes
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/good":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(good))
		case "/chunked":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(good[:1000]))
			w.(http.Flusher).Flush()
			w.Write([]byte(good[1000:]))
		default:
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<html>Internal error</html>"))
		}
	}))
	t.Cleanup(srv.Close)
	checks := []string{"status==200", "size==4096", "body contains {}{}", "header Content-Type ~ json"}
	for _, path := range []string{"/good", "/chunked"} {
		res, err := Run(context.Background(), Options{Targets: []Target{{URL: srv.URL + path}}, Connections: 2, Threads: 1, Requests: 200, Checks: checks})
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests != 200 || res.Errors != 0 {
			t.Errorf("%s (engine %s): %d requests, %d errors (%s), want every check passed", path, res.Engine, res.Requests, res.Errors, res.ErrorSummary())
		}
	}
	for _, c := range []struct{ check, sample string }{
		{"size==4096", "a body of 27 bytes"},
		{"body contains {}{}", "not in the 27-byte body"},
		{"header Content-Type ~ json", "no Content-Type header matches"},
		{"status==201", "status 200"},
	} {
		res, err := Run(context.Background(), Options{Targets: []Target{{URL: srv.URL + "/error-page"}}, Connections: 2, Threads: 1, Requests: 100, Checks: []string{"status<400", c.check}})
		if err == nil || res == nil {
			t.Fatalf("%s: every response failed its check, want Run's error, got %v", c.check, err)
		}
		if res.Requests != 0 || res.Errors != 100 || res.ErrorsBy["check"] != 100 {
			t.Errorf("%s (engine %s): %d requests, %d errors, %d check errors; want 0, 100, 100", c.check, res.Engine, res.Requests, res.Errors, res.ErrorsBy["check"])
		}
		if s := res.ErrorSample["check"]; !strings.Contains(s, c.check) || !strings.Contains(s, c.sample) {
			t.Errorf("%s: sample %q, want the check and %q", c.check, s, c.sample)
		}
		var text strings.Builder
		WriteText(&text, res, false)
		if !strings.Contains(text.String(), "Responses failing a check: 100 (first: check ") {
			t.Errorf("summary lacks the check failures:\n%s", text.String())
		}
	}
}
