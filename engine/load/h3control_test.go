package load

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go/quicvarint"
)

// goawayH3Server answers every request with 200 "ok" and, on each
// connection, sends GOAWAY on its control stream after the perConn-th
// request it accepted; it keeps answering the requests already sent (as
// a server shutting a connection down gracefully does). It counts the
// connections and the requests answered. extra, when set, is written on
// the control stream after SETTINGS instead (a misbehaving server).
func goawayH3Server(t *testing.T, perConn int, extra []byte) (url string, conns, answered *atomic.Int64) {
	t.Helper()
	ln := h3TestListener(t)
	conns, answered = new(atomic.Int64), new(atomic.Int64)
	resp := []byte{0x01, 0x03, 0x00, 0x00, 0xd9, 0x00, 0x02, 'o', 'k'} // HEADERS :status 200 (static 25), DATA "ok"
	go func() {
		for {
			qc, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				ctl, err := qc.OpenUniStream()
				if err != nil {
					return
				}
				ctl.Write([]byte{0x00, 0x04, 0x00}) // control stream, empty SETTINGS
				if extra != nil {
					ctl.Write(extra)
				}
				var mu sync.Mutex
				n := 0
				for {
					str, err := qc.AcceptStream(context.Background())
					if err != nil {
						return
					}
					mu.Lock()
					n++
					if n == perConn && extra == nil {
						id := uint64(str.StreamID()) + 4
						ctl.Write(append([]byte{0x07, byte(quicvarint.Len(id))}, quicvarint.Append(nil, id)...))
					}
					mu.Unlock()
					go func() {
						io.ReadAll(str)
						str.Write(resp)
						str.Close()
						answered.Add(1)
					}()
				}
			}()
		}
	}()
	return "https://" + ln.Addr().String(), conns, answered
}

// TestH3Goaway: a GOAWAY ends a connection gracefully: the requests in
// flight finish, none fails, the slot reconnects, and the load counts the
// connections that got one.
func TestH3Goaway(t *testing.T) {
	url, conns, answered := goawayH3Server(t, 50, nil)
	res, err := Run(context.Background(), Options{
		Targets: []Target{{URL: url + "/"}}, Protocol: ProtoH3, Connections: 2, Streams: 4, Requests: 400, Timeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 400 || res.Errors != 0 {
		t.Fatalf("requests %d, errors %d (%s): want 400 and none failed", res.Requests, res.Errors, res.ErrorSummary())
	}
	if res.Goaways < 4 || res.Reconnects < 4 {
		t.Errorf("goaways %d, reconnects %d: want at least 4 of each (50 requests per connection of 400)", res.Goaways, res.Reconnects)
	}
	if c := conns.Load(); c < 6 {
		t.Errorf("the server saw %d connections, want at least 6", c)
	}
	if a := answered.Load(); a < 400 {
		t.Errorf("the server answered %d requests, want at least 400", a)
	}
}

// TestH3ControlStreamErrors: a server whose control stream breaks the
// rules gets its connection closed; the load says so in its errors and
// goes on over new connections (it neither hangs nor counts successes it
// did not get).
func TestH3ControlStreamErrors(t *testing.T) {
	for name, extra := range map[string][]byte{
		"huge frame":      append([]byte{0x21}, quicvarint.Append(nil, 1<<30)...),
		"goaway too long": {0x07, 0x03, 0x04, 0x00, 0x00},
	} {
		t.Run(name, func(t *testing.T) {
			url, _, _ := goawayH3Server(t, 0, extra)
			res, err := Run(context.Background(), Options{
				Targets: []Target{{URL: url + "/"}}, Protocol: ProtoH3, Connections: 1, Streams: 1, Requests: 20, Timeout: 5 * time.Second,
			})
			if err == nil && res.Errors == 0 {
				t.Fatalf("a control stream with %s: %d requests, no error", name, res.Requests)
			}
			if res.Requests+res.Errors < 20 {
				t.Errorf("%d requests and %d errors: want the bounded load to finish (20)", res.Requests, res.Errors)
			}
		})
	}
}
