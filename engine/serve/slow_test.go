package serve

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// trickle dials base, writes head at once and then rest one byte every
// 20 ms (more of filler once rest is spent) until the server closes the
// connection; it returns the status of a response read meanwhile (0
// without one) once the connection is closed, or an error after the
// generous deadline.
func trickle(base, head, rest string) (int, error) {
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := io.WriteString(c, head); err != nil {
		return 0, err
	}
	stop := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			b := byte('a')
			if i < len(rest) {
				b = rest[i]
			}
			if _, err := c.Write([]byte{b}); err != nil {
				return
			}
		}
	}()
	defer close(stop)
	status := 0
	r := bufio.NewReader(c)
	if resp, err := http.ReadResponse(r, nil); err == nil {
		status = resp.StatusCode
		io.Copy(io.Discard, resp.Body)
	}
	// Then the server closes: EOF (or a reset), not the deadline.
	if _, err := io.Copy(io.Discard, r); err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return status, err
		}
	}
	return status, nil
}

// TestSlowClientsClosed: clients trickling a request's headers, or its
// body (with a length or chunked), a byte at a time, are closed after the
// header or body timeout (408 for the body) instead of being held for
// good; a body over the limit gets 413 and a close; once they are all
// closed the server's descriptors are back to where they were, and a new
// client is served. Nothing here is timed but the 60 s deadline that
// would mean the server kept a connection.
func TestSlowClientsClosed(t *testing.T) {
	base := start(t, Config{HeaderTimeout: 300 * time.Millisecond, BodyTimeout: 300 * time.Millisecond,
		MaxBodyBytes: 1 << 20, IdleTimeout: 200 * time.Millisecond})
	before := openFDs(t)
	kinds := []struct {
		name, head, rest string
		want             int
	}{
		{"slow headers", "GET / HTTP/1.1\r\nHost: t\r\n", "X-Slow: " + strings.Repeat("z", 200), 0},
		{"slow body", "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n", "", http.StatusRequestTimeout},
		{"slow chunked body", "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n", "ffff\r\n", http.StatusRequestTimeout},
	}
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	for _, k := range kinds {
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				status, err := trickle(base, k.head, k.rest)
				if err != nil {
					errs <- k.name + ": the server kept the connection: " + err.Error()
				} else if status != k.want {
					errs <- k.name + ": status " + http.StatusText(status) + ", want " + http.StatusText(k.want)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}

	// A body over the limit, sent at once: 413 and a close.
	rc := dial(t, base)
	io.WriteString(rc.c, "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 2000000\r\n\r\n")
	go rc.c.Write(make([]byte, 2000000))
	resp, err := http.ReadResponse(rc.r, nil)
	if err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge || !resp.Close {
		t.Errorf("a body over the limit: %v %v, want 413 and a close", resp, err)
	}

	// A body within the bounds is read and answered, the connection kept.
	rc = dial(t, base)
	io.WriteString(rc.c, "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello")
	if resp, err := http.ReadResponse(rc.r, nil); err != nil || resp.StatusCode != 200 || resp.Close {
		t.Errorf("a small body: %v %v, want 200, kept alive", resp, err)
	}
	rc.c.Close()

	deadline := time.Now().Add(60 * time.Second)
	for openFDs(t) > before+1 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := openFDs(t); n > before+1 {
		t.Errorf("%d descriptors open after the slow clients were closed, %d before", n, before)
	}
}

// TestSlowH2BodyClosed: over h2c, a stream trickling its body a byte at a
// time is answered 408 after the body timeout, and the connection, idle
// once the stream ended, is closed by the idle timeout: the trickler holds
// no descriptor for good.
func TestSlowH2BodyClosed(t *testing.T) {
	base := start(t, Config{BodyTimeout: 300 * time.Millisecond, IdleTimeout: 200 * time.Millisecond})
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	io.WriteString(c, http2.ClientPreface)
	fr := http2.NewFramer(c, c)
	fr.WriteSettings()
	var blk bytes.Buffer
	enc := hpack.NewEncoder(&blk)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", "t"}, {":path", "/"}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	var mu sync.Mutex
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: blk.Bytes(), EndHeaders: true})
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			mu.Lock()
			err := fr.WriteData(1, false, []byte{'a'})
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	status := ""
	dec := hpack.NewDecoder(4096, func(f hpack.HeaderField) {
		if f.Name == ":status" {
			status = f.Value
		}
	})
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the server kept the connection: %v", err)
			}
			break // closed
		}
		if h, ok := f.(*http2.HeadersFrame); ok && h.StreamID == 1 {
			dec.Write(h.HeaderBlockFragment())
		}
		if _, ok := f.(*http2.GoAwayFrame); ok {
			break
		}
	}
	if status != "408" {
		t.Errorf("stream answered %q, want 408", status)
	}
}
