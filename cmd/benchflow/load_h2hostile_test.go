package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// hostileServer serves every connection with handle on a loopback port
// until the test ends.
func hostileServer(t *testing.T, handle func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "http://" + ln.Addr().String() + "/"
}

// h2Preface reads the client preface and, with settings, sends an empty
// SETTINGS; it returns a reader of the client's frames.
func h2Preface(c net.Conn, settings bool) (*bufio.Reader, bool) {
	br := bufio.NewReader(c)
	if _, err := io.ReadFull(br, make([]byte, len(http2.ClientPreface))); err != nil {
		return nil, false
	}
	if settings {
		http2.NewFramer(c, nil).WriteSettings()
	}
	return br, true
}

// loadRSS runs `benchflow load ARGS…` and returns stdout, stderr, the exit
// code and the most memory the process held: its VmHWM (peak resident
// set of its own address space, unlike wait4's ru_maxrss, which starts
// from this test's), read from /proc until it exits.
func loadRSS(t *testing.T, args ...string) (string, string, int, int64) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"load"}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	hwm := make(chan int64)
	go func() {
		peak := int64(0)
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		for {
			if b, err := os.ReadFile(status); err == nil {
				for _, l := range strings.Split(string(b), "\n") {
					if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
						if kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64); err == nil && kb<<10 > peak {
							peak = kb << 10
						}
					}
				}
			}
			select {
			case <-done:
				hwm <- peak
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	peak := <-hwm
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code, peak
}

// TestLoadH2HostileBinary: through the real binary, a server that sends
// SETTINGS then a frame header claiming 16 MiB of DATA (or HEADERS) and no
// payload fails each request as a parse error naming FRAME_SIZE_ERROR,
// with 40 connections holding far less than the 16 MiB each they took
// before (436 and 567 MiB in all); a server that answers the h2c preface
// with HTTP/1.1 is a parse error that says so; and an HTTP/1.1 load
// against a port that speaks only HTTP/2 says to use --h2.
func TestLoadH2HostileBinary(t *testing.T) {
	oversized := func(typ http2.FrameType) func(c net.Conn) {
		return func(c net.Conn) {
			br, ok := h2Preface(c, true)
			if !ok {
				return
			}
			fr := http2.NewFramer(nil, br)
			for {
				f, err := fr.ReadFrame()
				if err != nil {
					return
				}
				if h, ok := f.(*http2.HeadersFrame); ok {
					id := h.StreamID
					c.Write([]byte{0xff, 0xff, 0xff, byte(typ), 0x4, byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)})
				}
			}
		}
	}
	http1 := func(c net.Conn) {
		if _, ok := h2Preface(c, false); !ok {
			return
		}
		io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 11\r\nConnection: close\r\n\r\nBad Request")
	}
	type jsonResult struct {
		Requests int64             `json:"requests"`
		Errors   int64             `json:"errors"`
		ErrorsBy map[string]int64  `json:"errors_by"`
		Samples  map[string]string `json:"error_samples"`
	}
	for _, c := range []struct {
		name   string
		handle func(c net.Conn)
		args   []string
		class  string
		want   string
	}{
		{"DATA of 0xFFFFFF bytes", oversized(http2.FrameData), []string{"--h2", "-d", "2s", "--timeout", "500ms"}, "parse",
			"FRAME_SIZE_ERROR: the server sent a DATA frame of 16777215 bytes on stream 1, above the client's SETTINGS_MAX_FRAME_SIZE of 16384"},
		{"HEADERS of 0xFFFFFF bytes", oversized(http2.FrameHeaders), []string{"--h2", "-d", "2s", "--timeout", "500ms"}, "parse",
			"FRAME_SIZE_ERROR: the server sent a HEADERS frame of 16777215 bytes on stream 1"},
		{"HTTP/1.1 answer to the h2c preface", http1, []string{"--h2", "-n", "40", "--timeout", "5s"}, "parse",
			"the server does not speak h2c (it answered HTTP/1.1): drop --h2, or use https:// for ALPN"},
		{"HTTP/1.1 to an h2c-only port", func(c net.Conn) {
			c.Read(make([]byte, 4096))
			fr := http2.NewFramer(c, nil)
			fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 128})
			fr.WriteGoAway(0, http2.ErrCodeProtocol, nil)
		}, []string{"-n", "40"}, "parse", "it speaks only HTTP/2 on this port (use --h2"},
		{"HTTP/1.1 to a port that closes every connection", func(c net.Conn) { c.Read(make([]byte, 4096)) }, []string{"-n", "40"}, "read",
			"server closed the connection before responding"},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := hostileServer(t, c.handle)
			args := append(append([]string{}, c.args...), "--json", "-c", "40", url)
			bounded := slices.Contains(args, "-n") // else by duration: the count varies
			stdout, stderr, code, rss := loadRSS(t, args...)
			if code != 1 {
				t.Errorf("exit code %d, want 1 (every request failed)\nstderr: %s", code, stderr)
			}
			var res jsonResult
			if err := json.Unmarshal([]byte(stdout), &res); err != nil {
				t.Fatalf("--json output does not parse: %v\n%s\nstderr: %s", err, stdout, stderr)
			}
			if res.Requests != 0 || res.Errors == 0 || res.ErrorsBy[c.class] != res.Errors || (bounded && res.Errors != 40) {
				t.Errorf("requests %d errors %d %v, want only %s errors (40 with -n 40)", res.Requests, res.Errors, res.ErrorsBy, c.class)
			}
			if !strings.Contains(res.Samples[c.class], c.want) {
				t.Errorf("%s sample %q, want it to contain %q", c.class, res.Samples[c.class], c.want)
			}
			if !strings.Contains(stderr, "requests failed") || !strings.Contains(stderr, c.want) {
				t.Errorf("stderr %q, want all requests failed and %q", stderr, c.want)
			}
			if !slices.Contains(args, "--h2") && !strings.Contains(stderr, "use --h2") {
				t.Errorf("stderr %q does not hint --h2", stderr)
			}
			// Believing the frame header held 436 MiB (DATA) and 567 MiB
			// (HEADERS) after 2 s of reconnects every 500 ms.
			t.Logf("%d errors, peak RSS %.1f MiB", res.Errors, float64(rss)/(1<<20))
			if rss > 200<<20 {
				t.Errorf("peak RSS %.1f MiB, want at most 200 MiB", float64(rss)/(1<<20))
			}
		})
	}
}
