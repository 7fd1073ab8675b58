package load

// The HTTP/3 connection's unidirectional streams. The raw request path
// (h3raw.go) opens request streams on the QUIC connection itself, so
// http3.ClientConn does not know they are in flight: left to it, the
// server's GOAWAY would close the connection at once (it closes when it
// sees no request of its own), failing every request in flight. So the
// session reads the server's unidirectional streams itself
// (http3.RawClientConn, which still sends the client's SETTINGS):
//
//   - the control stream (type 0x00): SETTINGS first (skipped), then
//     GOAWAY — no new request on the connection, those in flight finish,
//     the slot reconnects (Result.Goaways counts the connections that got
//     one, as for HTTP/2); other frames are skipped; its end closes the
//     connection (H3_CLOSED_CRITICAL_STREAM), as RFC 9114 6.2.1 asks;
//   - QPACK's encoder and decoder streams (0x02, 0x03): read and dropped
//     (the client allows no dynamic table: QPACK_MAX_TABLE_CAPACITY 0);
//   - a push stream (0x01): the client never allowed one (no MAX_PUSH_ID),
//     so the connection ends with H3_ID_ERROR;
//   - any other type (reserved or unknown): the stream is refused with
//     H3_STREAM_CREATION_ERROR and the connection goes on.
//
// A control frame longer than h3MaxControlFrame ends the connection
// (H3_EXCESSIVE_LOAD): a server cannot make the client hold or skip
// without bound.

import (
	"bufio"
	"context"
	"errors"
	"io"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/quicvarint"
)

// h3MaxControlFrame bounds one frame of the server's control stream.
const h3MaxControlFrame = 64 << 10

// newH3Session starts the session of QUIC connection qc: the library's
// client connection (SETTINGS, the fallback's RoundTrip) and the reader of
// the server's unidirectional streams.
func newH3Session(c *conn, qc *quic.Conn, tr *http3.Transport) *h3Session {
	rc := tr.NewRawClientConn(qc)
	s := &h3Session{c: c, qc: qc, cc: rc.ClientConn}
	go func() {
		for {
			str, err := qc.AcceptUniStream(context.Background())
			if err != nil {
				return
			}
			go s.uniStream(str)
		}
	}()
	return s
}

// uniStream handles one unidirectional stream the server opened.
func (s *h3Session) uniStream(str *quic.ReceiveStream) {
	br := bufio.NewReaderSize(str, 512)
	typ, err := quicvarint.Read(br)
	if err != nil {
		return
	}
	switch typ {
	case 0x00:
		err := s.controlStream(br)
		if s.qc.Context().Err() != nil {
			return // the connection ended first
		}
		code := http3.ErrCodeClosedCriticalStream
		var ce h3ControlError
		if errors.As(err, &ce) {
			code = ce.code
		}
		s.qc.CloseWithError(quic.ApplicationErrorCode(code), err.Error())
	case 0x01:
		s.qc.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeIDError), "push stream without MAX_PUSH_ID")
	case 0x02, 0x03:
		io.Copy(io.Discard, br)
	default:
		str.CancelRead(quic.StreamErrorCode(http3.ErrCodeStreamCreationError))
	}
}

// h3ControlError is a control stream's error with the code that closes
// the connection.
type h3ControlError struct {
	msg  string
	code http3.ErrCode
}

func (e h3ControlError) Error() string { return e.msg }

// controlStream reads the server's control stream until it ends (an
// error, always: the stream must stay open for the connection's life).
func (s *h3Session) controlStream(br *bufio.Reader) error {
	first := true
	for {
		typ, err := quicvarint.Read(br)
		if err != nil {
			return h3ControlError{"the server's control stream ended", http3.ErrCodeClosedCriticalStream}
		}
		n, err := quicvarint.Read(br)
		if err != nil {
			return h3ControlError{"the server's control stream ended", http3.ErrCodeClosedCriticalStream}
		}
		if n > h3MaxControlFrame {
			return h3ControlError{"a control frame over 64 KiB", http3.ErrCodeExcessiveLoad}
		}
		if first && typ != h3FrameSettings {
			return h3ControlError{"the server's control stream does not start with SETTINGS", http3.ErrCodeMissingSettings}
		}
		first = false
		if typ == h3FrameGoaway {
			id, err := quicvarint.Read(br)
			if err != nil || uint64(quicvarint.Len(id)) != n {
				return h3ControlError{"a GOAWAY frame that is not one stream id", http3.ErrCodeFrameError}
			}
			s.goaway()
			continue
		}
		if _, err := br.Discard(int(n)); err != nil {
			return h3ControlError{"the server's control stream ended", http3.ErrCodeClosedCriticalStream}
		}
	}
}

// goaway marks the session as going away: its streams take no new
// request, and the slot counts it once.
func (s *h3Session) goaway() {
	s.mu.Lock()
	first := !s.away
	s.away = true
	s.mu.Unlock()
	if first {
		s.c.mu.Lock()
		s.c.goaways++
		s.c.mu.Unlock()
	}
}
