package load

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rawServer is a loopback TCP server whose connections are handled by a
// function; it counts connections and waits for them on Close.
type rawServer struct {
	ln       net.Listener
	accepted atomic.Int64
	open     atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]bool
}

func newRawServer(t testing.TB, handle func(c net.Conn)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			s.open.Add(1)
			s.mu.Lock()
			s.conns[c] = true
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer s.open.Add(-1)
				defer func() {
					s.mu.Lock()
					delete(s.conns, c)
					s.mu.Unlock()
				}()
				defer c.Close()
				handle(c)
			}()
		}
	}()
	t.Cleanup(s.Close)
	return s
}

func (s *rawServer) URL(path string) string { return "http://" + s.ln.Addr().String() + path }

func (s *rawServer) Close() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// waitClientsGone waits until the client closed every connection (the
// server's reads see EOF), failing the test otherwise.
func (s *rawServer) waitClientsGone(t testing.TB) {
	t.Helper()
	for i := 0; i < 500 && s.open.Load() > 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := s.open.Load(); n > 0 {
		t.Errorf("%d connections still open on the server after the load ended", n)
	}
}

// readRequests reads requests (headers, then Content-Length body) and
// calls respond for each; it returns when the client closes.
func readRequests(c net.Conn, respond func(w io.Writer, method, path string) bool) {
	br := bufio.NewReaderSize(c, 16<<10)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			return
		}
		clen := 0
		for {
			h, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if h == "\r\n" {
				break
			}
			if k, v, ok := strings.Cut(h, ":"); ok && strings.EqualFold(k, "content-length") {
				v = strings.TrimSpace(v)
				for _, d := range v {
					clen = clen*10 + int(d-'0')
				}
			}
		}
		if clen > 0 {
			if _, err := io.CopyN(io.Discard, br, int64(clen)); err != nil {
				return
			}
		}
		if !respond(c, f[0], f[1]) {
			return
		}
	}
}

const okResponse = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhello\n"

// okServer answers every request with okResponse.
func okServer(t testing.TB) *rawServer {
	return newRawServer(t, func(c net.Conn) {
		readRequests(c, func(w io.Writer, _, _ string) bool {
			_, err := io.WriteString(w, okResponse)
			return err == nil
		})
	})
}

// fixedResponse answers every request with the given bytes and then,
// when closeAfter, closes the connection.
func fixedResponse(t testing.TB, resp string, closeAfter bool) *rawServer {
	return newRawServer(t, func(c net.Conn) {
		readRequests(c, func(w io.Writer, _, _ string) bool {
			_, err := io.WriteString(w, resp)
			return err == nil && !closeAfter
		})
	})
}

// fastServer answers body-less requests with okResponse without allocating
// per request, so allocation counts measure the client alone.
func fastServer(t testing.TB) *rawServer {
	resp := []byte(okResponse)
	return newRawServer(t, func(c net.Conn) {
		buf := make([]byte, 16<<10)
		out := make([]byte, 0, 64*len(resp))
		held := 0 // bytes of a partial request kept at the front of buf
		for {
			n, err := c.Read(buf[held:])
			if err != nil {
				return
			}
			data := buf[:held+n]
			out = out[:0]
			for {
				i := bytes.Index(data, []byte("\r\n\r\n"))
				if i < 0 {
					break
				}
				data = data[i+4:]
				out = append(out, resp...)
			}
			held = copy(buf, data)
			if len(out) > 0 {
				if _, err := c.Write(out); err != nil {
					return
				}
			}
		}
	})
}
