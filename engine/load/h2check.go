package load

import (
	"context"
	"io"
	"time"

	"github.com/quic-go/qpack"
	"golang.org/x/net/http2/hpack"
)

// h2Checks runs the load's response checks (check.go) on an HTTP/2
// session's streams: each stream in flight with a final response holds a
// checkState, taken from the session's free list and given back when the
// stream completes. The header fields are decoded by a second, complete
// HPACK decoder (it keeps its own copy of the dynamic table, fed every
// block in order) only when a header check asks for them.
type h2Checks struct {
	cs   []check
	hdec *hpack.Decoder // nil without a header check
	hit  []bool         // per check: a field of the last block matched it
	free []*checkState
}

func (k *h2Checks) init(cs []check) {
	if cs == nil {
		return
	}
	k.cs, k.hit = cs, make([]bool, len(cs))
	if hasHeaderChecks(cs) {
		k.hdec = hpack.NewDecoder(hpackTableLimit, func(f hpack.HeaderField) { matchField(k.cs, k.hit, f.Name, f.Value) })
		k.hdec.SetMaxStringLength(h2MaxHeaderList)
	}
}

// decode reads a header block for the header checks; every block of the
// session goes through it, in order, to keep the table in step.
func (k *h2Checks) decode(block []byte) error {
	if k.hdec == nil {
		return nil
	}
	clear(k.hit)
	if _, err := k.hdec.Write(block); err != nil {
		return err
	}
	return k.hdec.Close()
}

// begin gives st a checkState when its final response's headers (the
// block decode read last) arrive, judging its status and header checks.
func (k *h2Checks) begin(st *h2Stream) {
	if k.cs == nil {
		return
	}
	if n := len(k.free); n > 0 {
		st.chk, k.free = k.free[n-1], k.free[:n-1]
	} else {
		st.chk = newCheckState(k.cs)
	}
	st.chk.begin()
	st.chk.final(st.status, k.hit)
}

// end is the outcome of st once complete: o, or a check error if o is a
// response and it failed a check; st's checkState goes back to the list.
func (k *h2Checks) end(st *h2Stream, o outcome) outcome {
	if st.chk == nil {
		return o
	}
	if o.err == nil {
		if err := st.chk.verdict(); err != nil {
			o.class, o.err = classCheck, err
		}
	}
	k.free = append(k.free, st.chk)
	st.chk = nil
	return o
}

// checkFields judges the status and header checks of a final response on
// the HTTP/3 raw path, decoding its field section p (which decodeStatus
// found to need no dynamic table) in full only when a header check asks.
func (x *h3Raw) checkFields(p []byte, status int) error {
	hit := x.hit // nil without a header check: final does not look
	if hit != nil {
		clear(hit)
		next := qpack.NewDecoder().Decode(p)
		for {
			f, err := next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return errH3QPACK
			}
			matchField(x.chk.checks, hit, f.Name, f.Value)
		}
	}
	x.chk.final(status, hit)
	return nil
}

// data reads a DATA frame's payload of length bytes through the buffer
// as skip does, giving each piece to the body checks in place.
func (x *h3Raw) data(str h3Stream, length uint64) (uint64, error) {
	if x.chk == nil {
		return x.skip(str, length)
	}
	var done uint64
	for {
		avail := uint64(x.w - x.r)
		if avail >= length {
			x.chk.body(x.buf[x.r : x.r+int(length)])
			x.r += int(length)
			x.got += int64(length)
			return done + length, nil
		}
		x.chk.body(x.buf[x.r:x.w])
		length -= avail
		done += avail
		x.got += int64(avail)
		x.r, x.w = 0, 0
		if err := x.fill(str); err != nil {
			if err == io.EOF {
				return done, errH3Truncated
			}
			return done, err
		}
	}
}

// useChecks gives the stream loop's raw state the load's checks, once.
func (x *h3Raw) useChecks(cs []check) {
	if cs == nil || x.chk != nil {
		return
	}
	x.chk = newCheckState(cs)
	if hasHeaderChecks(cs) {
		x.hit = make([]bool, len(cs))
	}
}

// exchangeLibChecked is exchangeLib for a load with checks: the same
// exchange, its response's fields and body (read through the stream
// loop's buffer) judged by the checks.
func (s *h3Session) exchangeLibChecked(x *h3Raw, req *request, intended, sent time.Duration) (outcome, int64) {
	r := s.c.r
	x.useChecks(r.checks)
	if x.buf == nil {
		x.buf = make([]byte, h3ReadBuf)
	}
	ctx, cancel := context.WithDeadline(context.Background(), r.startWall.Add(r.deadline(r.origin(intended, sent), sent)))
	defer cancel()
	hr, err := req.h3.newHTTP(ctx)
	if err != nil {
		return outcome{class: classWrite, err: err}, 0
	}
	resp, err := s.cc.RoundTrip(hr)
	if err != nil {
		return outcome{class: h3Class(err, classWrite), err: h3Error(err)}, 0
	}
	x.chk.begin()
	if x.hit != nil {
		clear(x.hit)
		for name, vs := range resp.Header {
			for _, v := range vs {
				matchField(x.chk.checks, x.hit, name, v)
			}
		}
	}
	x.chk.final(resp.StatusCode, x.hit)
	var n int64
	for {
		m, rerr := resp.Body.Read(x.buf)
		x.chk.body(x.buf[:m])
		n += int64(m)
		if rerr != nil {
			if rerr != io.EOF {
				err = rerr
			}
			break
		}
	}
	resp.Body.Close()
	n += h3FramingEstimate(resp, n)
	if err != nil {
		return outcome{class: h3Class(err, classRead), err: h3Error(err)}, n
	}
	if err := x.chk.verdict(); err != nil {
		return outcome{status: resp.StatusCode, class: classCheck, err: err}, n
	}
	return outcome{status: resp.StatusCode}, n
}
