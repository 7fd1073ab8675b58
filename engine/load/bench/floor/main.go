// Command floor is the cheapest HTTP/1.1 keep-alive client this machine's
// kernel allows with epoll: it measures what a request costs a client that
// does nothing but the two system calls every request needs (one write,
// one read) and one epoll_wait per batch of ready connections. It parses
// nothing per request — it learns the response's length once, before the
// load, and then counts bytes — keeps no latency, and checks nothing, so
// it is not a load generator: it is the floor under any of them, the CPU
// per request below which no epoll client of this server can go.
//
//	go run ./engine/load/bench/floor -c 64 -d 5s http://127.0.0.1:8080/6b
//
// It prints wrk's summary lines (`N requests in Ds`, `Requests/sec: R`)
// so engine/load/bench/compare-wrk.sh can measure it like wrk (FLOOR=1).
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	conns := flag.Int("c", 64, "connections")
	dur := flag.Duration("d", 5*time.Second, "duration")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: floor [-c N] [-d DURATION] http://HOST:PORT/PATH (loopback only)")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || *conns < 1 || *dur <= 0 {
		flag.Usage()
		os.Exit(2)
	}
	n, elapsed, err := run(flag.Arg(0), *conns, *dur)
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	fmt.Printf("  %d requests in %.2fs\nRequests/sec: %.2f\n", n, elapsed.Seconds(), float64(n)/elapsed.Seconds())
}

func run(raw string, conns int, dur time.Duration) (int64, time.Duration, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" {
		return 0, 0, fmt.Errorf("%q: want an http:// URL", raw)
	}
	addr, err := net.ResolveTCPAddr("tcp4", u.Host)
	if err != nil {
		return 0, 0, err
	}
	if !addr.IP.IsLoopback() {
		return 0, 0, fmt.Errorf("%s is not a loopback address", addr.IP)
	}
	path := u.RequestURI()
	req := []byte("GET " + path + " HTTP/1.1\r\nHost: " + u.Host + "\r\n\r\n")
	size, err := responseSize(u.Host, req)
	if err != nil {
		return 0, 0, err
	}

	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return 0, 0, err
	}
	defer unix.Close(ep)
	got := make([]int, conns) // bytes of the current response, per connection
	fds := make([]int, conns)
	sa := &unix.SockaddrInet4{Port: addr.Port}
	copy(sa.Addr[:], addr.IP.To4())
	for i := range fds {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return 0, 0, err
		}
		defer unix.Close(fd)
		if err := unix.Connect(fd, sa); err != nil {
			return 0, 0, err
		}
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		if err := unix.SetNonblock(fd, true); err != nil {
			return 0, 0, err
		}
		fds[i] = fd
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			return 0, 0, err
		}
	}
	buf := make([]byte, 256<<10)
	events := make([]unix.EpollEvent, conns)
	var done int64
	start := time.Now()
	for _, fd := range fds {
		if _, err := unix.Write(fd, req); err != nil {
			return 0, 0, err
		}
	}
	deadline := start.Add(dur)
	for checks := 0; ; checks++ {
		if checks&63 == 0 && !time.Now().Before(deadline) {
			break
		}
		n, err := unix.EpollWait(ep, events, 100)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return 0, 0, err
		}
		for _, ev := range events[:max(n, 0)] {
			i := int(ev.Fd)
			r, err := unix.Read(fds[i], buf)
			if errors.Is(err, unix.EAGAIN) {
				continue
			}
			if err != nil || r == 0 {
				return done, time.Since(start), fmt.Errorf("connection %d: read: %v (closed: %v)", i, err, r == 0)
			}
			got[i] += r
			if got[i] < size {
				continue
			}
			if got[i] > size {
				return done, time.Since(start), fmt.Errorf("connection %d: %d bytes for a %d-byte response", i, got[i], size)
			}
			got[i] = 0
			done++
			if _, err := unix.Write(fds[i], req); err != nil {
				return done, time.Since(start), err
			}
		}
	}
	return done, time.Since(start), nil
}

// responseSize fetches the resource once and returns the length of the
// whole response (status line, headers and body) as the server sends it.
func responseSize(host string, req []byte) (int, error) {
	c, err := net.Dial("tcp4", host)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if _, err := c.Write(req); err != nil {
		return 0, err
	}
	cr := &countingReader{r: c}
	br := bufio.NewReaderSize(cr, 1<<20)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, err
	}
	if resp.ContentLength < 0 || len(resp.TransferEncoding) > 0 || resp.Close {
		return 0, errors.New("the floor needs a keep-alive response with a Content-Length")
	}
	body := make([]byte, resp.ContentLength)
	if _, err := io.ReadFull(br, body); err != nil {
		return 0, err
	}
	if br.Buffered() != 0 {
		return 0, errors.New("the server sent more than one response")
	}
	return cr.n, nil
}

type countingReader struct {
	r interface{ Read([]byte) (int, error) }
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
