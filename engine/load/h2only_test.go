package load

import (
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// TestH1AgainstH2OnlyServer: an HTTP/1.1 load against a port that speaks
// only HTTP/2 says to use --h2, on every engine, keep-alive and --close:
// whether the server answers with its SETTINGS and a GOAWAY (as nginx
// and nghttpx do: a "parse" error naming HTTP/2 at once, not a wait for a
// header block that never comes), with a GOAWAY alone, or closes every
// connection without a byte (Run's error adds the hint); Go's own h2c
// server does one or the other.
func TestH1AgainstH2OnlyServer(t *testing.T) {
	frames := func(settings, goaway bool) func(c net.Conn) {
		return func(c net.Conn) {
			c.Read(make([]byte, 4096)) // the request
			fr := http2.NewFramer(c, nil)
			if settings {
				fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 128})
				fr.WriteWindowUpdate(0, 1<<20)
			}
			if goaway {
				fr.WriteGoAway(0, http2.ErrCodeProtocol, nil)
			}
		}
	}
	servers := []struct {
		name   string
		handle func(c net.Conn)
		class  string
	}{
		{"SETTINGS and GOAWAY", frames(true, true), "parse"},
		{"GOAWAY", frames(false, true), "parse"},
		{"closes every connection", func(c net.Conn) { c.Read(make([]byte, 4096)) }, "read"},
		{"Go's h2c server", func(c net.Conn) {
			(&http2.Server{}).ServeConn(c, &http2.ServeConnOpts{BaseConfig: &http.Server{ErrorLog: log.New(io.Discard, "", 0)}})
		}, ""},
	}
	engines := []string{EngineGoroutines, EngineEpoll}
	if UringAvailable() == nil {
		engines = append(engines, EngineUring)
	}
	for _, sv := range servers {
		for _, engine := range engines {
			for _, close := range []bool{false, true} {
				name := sv.name + "/" + engine
				if close {
					name += "/close"
				}
				t.Run(name, func(t *testing.T) {
					s := newRawServer(t, sv.handle)
					res, err := Run(context.Background(), Options{Targets: []Target{{URL: s.URL("/")}}, Engine: engine,
						Connections: 2, Requests: 6, Close: close, Timeout: 5 * time.Second})
					if err == nil || !strings.Contains(err.Error(), "all 6 requests failed") ||
						!strings.Contains(err.Error(), `it speaks only HTTP/2 on this port`) || !strings.Contains(err.Error(), "use --h2") {
						t.Errorf("Run: %v\nwant all 6 requests failed, with the hint to use --h2", err)
					}
					if res.Engine != engine {
						t.Errorf("engine %s, want %s", res.Engine, engine)
					}
					if sv.class != "" && res.ErrorsBy[sv.class] != 6 {
						t.Errorf("errors %v, want 6 %s errors", res.ErrorsBy, sv.class)
					}
					if sv.class == "parse" && res.ErrorSample["parse"] != errHTTP2Answer.Error() {
						t.Errorf("parse sample %q, want %q", res.ErrorSample["parse"], errHTTP2Answer)
					}
				})
			}
		}
	}
}

// TestLooksHTTP2 tells what an HTTP/2-only server sends from HTTP/1.1
// responses and other bytes.
func TestLooksHTTP2(t *testing.T) {
	var b bytes.Buffer
	fr := http2.NewFramer(&b, nil)
	fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 128}, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
	settings := bytes.Clone(b.Bytes())
	b.Reset()
	fr.WriteSettings()
	empty := bytes.Clone(b.Bytes())
	b.Reset()
	fr.WriteSettingsAck()
	ack := bytes.Clone(b.Bytes())
	b.Reset()
	fr.WriteGoAway(0, http2.ErrCodeProtocol, []byte("bad preface"))
	goaway := bytes.Clone(b.Bytes())
	b.Reset()
	fr.WritePing(false, [8]byte{})
	ping := bytes.Clone(b.Bytes())
	for _, c := range []struct {
		b    []byte
		want bool
	}{
		{settings, true}, {empty, true}, {ack, true}, {goaway, true},
		{settings[:8], false}, // too short to tell
		{ping, false},
		{[]byte("HTTP/1.1 200 OK\r\n\r\n"), false},
		{[]byte("HELLO THERE\r\n\r\n"), false},
		{frameHeader(7, http2.FrameSettings, 0, 0), false}, // not whole settings
		{frameHeader(6, http2.FrameSettings, 0, 1), false}, // not stream 0
		{frameHeader(4, http2.FrameGoAway, 0, 0), false},   // too short
	} {
		if got := looksHTTP2(c.b); got != c.want {
			t.Errorf("looksHTTP2(%q) = %v, want %v", c.b, got, c.want)
		}
	}
}

// TestH2SummaryStreams: the HTTP/2 line of the summary counts streams in
// the singular at one.
func TestH2SummaryStreams(t *testing.T) {
	for n, want := range map[int]string{1: "up to 1 stream per connection", 10: "up to 10 streams per connection"} {
		var b strings.Builder
		if err := WriteText(&b, &Result{Protocol: ProtoH2C, Streams: n, MaxInFlight: 1, Duration: time.Second}, false); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), want) {
			t.Errorf("--streams %d: summary\n%s\nwant %q", n, b.String(), want)
		}
	}
}
