package load

import (
	"bytes"
	"errors"
	"hash/maphash"

	"golang.org/x/net/http2/hpack"
)

// statusDecoder decodes HPACK header blocks (RFC 7541) for the one field
// the load generator reads, the leading :status, without allocating.
// Every field is still parsed and the dynamic table kept in step with the
// server's encoder (a later block may refer to any entry), but an entry
// holds only its size and, for a :status entry, its value: the names and
// values themselves are never built.
type statusDecoder struct {
	tab     [hpackMaxEntries]hpackEntry // ring of the dynamic table
	first   int                         // ring index of the oldest entry
	n       int                         // entries in the table
	size    int                         // their sizes summed (RFC 7541 §4.1)
	maxSize int                         // the encoder's current maximum
	huff    bytes.Buffer                // a Huffman-decoded string
	lens    [hpackLenCache][2]huffLen   // decoded lengths of recent strings
	seed    maphash.Seed                // for the index in lens
}

// huffLen caches the decoded length of a Huffman-coded string: a server
// sends the same values again and again (nginx: server, content-type,
// etag, last-modified, a date that changes once a second), each added to
// the table, whose size needs their decoded length; decoding them every
// time was most of the cost of a response.
type huffLen struct {
	enc []byte // the string as sent
	n   int    // its decoded length
}

// hpackLenCache is the number of sets of two cached lengths (the most
// recent first), and hpackLenMax the longest string cached.
const (
	hpackLenCache = 32
	hpackLenMax   = 128
)

// hpackLongStr is the longest Huffman-coded string the decoder decodes.
// A longer one decodes to more than hpackTableLimit bytes (a code is at
// most 30 bits), so it cannot be :status nor fit the table: its exact
// length does not matter, and decoding it would buffer as much as the
// server chose to send (its Huffman code is then not checked).
const hpackLongStr = 16 << 10

// hpackTableLimit is SETTINGS_HEADER_TABLE_SIZE, the client's default
// (it never sends another): the largest table the server may use.
const hpackTableLimit = 4096

// hpackMaxEntries bounds the entries of a table of hpackTableLimit bytes
// (each entry counts at least 32 bytes).
const hpackMaxEntries = hpackTableLimit / 32

// hpackEntry is a dynamic table entry: its size, the length of its name
// and, when the name is :status, its value as a number (0 if not one); -1
// for any other name.
type hpackEntry struct {
	size, nameLen int
	status        int
}

var errHpack = errors.New("hpack: invalid header block")

func newStatusDecoder() *statusDecoder {
	return &statusDecoder{maxSize: hpackTableLimit, seed: maphash.MakeSeed()}
}

// staticStatus is the :status of static table entries 8 to 14.
var staticStatus = [...]int{200, 204, 206, 304, 400, 404, 500}

// hpackStaticLen is the number of entries in the static table.
const hpackStaticLen = 61

// decode reads a complete header block and returns the :status of its
// first field (0 if the first field is not :status or its value not a
// number); an invalid block is an error (COMPRESSION_ERROR).
func (d *statusDecoder) decode(p []byte) (status int, err error) {
	first := true
	for len(p) > 0 {
		b := p[0]
		var st int // the field's status, -1 if it is not :status
		switch {
		case b&0x80 != 0: // indexed field
			var i uint64
			if i, p, err = hpackInt(p, 7); err != nil {
				return 0, err
			}
			if st, err = d.indexed(i); err != nil {
				return 0, err
			}
		case b&0xe0 == 0x20: // dynamic table size update
			if !first {
				return 0, errHpack // only at the start of a block
			}
			var v uint64
			if v, p, err = hpackInt(p, 5); err != nil {
				return 0, err
			}
			if v > hpackTableLimit {
				return 0, errHpack
			}
			d.maxSize = int(v)
			d.evict(0)
			continue
		default: // literal: with incremental indexing (01), without (0000) or never indexed (0001)
			prefix := uint8(4)
			if b&0xc0 == 0x40 {
				prefix = 6
			}
			var i uint64
			if i, p, err = hpackInt(p, prefix); err != nil {
				return 0, err
			}
			nameLen := 0
			if i > 0 {
				if st, err = d.indexed(i); err != nil {
					return 0, err
				}
				if st >= 0 {
					nameLen = len(":status")
				} else {
					nameLen = d.nameLen(i)
				}
			} else {
				st = -1
				if nameLen, _, err = d.strLen(p); err != nil {
					return 0, err
				}
				var name []byte
				if name, p, err = d.str(p, nameLen == len(":status")); err != nil {
					return 0, err
				}
				if string(name) == ":status" {
					st = 0
				}
			}
			// The value is needed only for :status; its decoded
			// length only for a new table entry.
			valueLen := 0
			if st >= 0 {
				var value []byte
				if value, p, err = d.str(p, true); err != nil {
					return 0, err
				}
				st, valueLen = statusValue(value), len(value)
			} else if prefix == 6 {
				if valueLen, p, err = d.strLen(p); err != nil {
					return 0, err
				}
			} else if _, p, err = d.str(p, false); err != nil {
				return 0, err
			}
			if prefix == 6 {
				d.add(hpackEntry{size: nameLen + valueLen + 32, nameLen: nameLen, status: st})
			}
		}
		if first {
			status = max(st, 0)
			first = false
		}
	}
	return status, nil
}

// indexed returns the status of table entry i (-1 when its name is not
// :status).
func (d *statusDecoder) indexed(i uint64) (int, error) {
	switch {
	case i == 0:
		return 0, errHpack
	case i <= hpackStaticLen:
		if i >= 8 && i <= 14 {
			return staticStatus[i-8], nil
		}
		return -1, nil
	case i-hpackStaticLen <= uint64(d.n):
		return d.entry(int(i - hpackStaticLen)).status, nil
	}
	return 0, errHpack
}

// nameLen is the length of the name of table entry i (a valid index whose
// name is not :status), for the size of a new entry that reuses it.
func (d *statusDecoder) nameLen(i uint64) int {
	if i <= hpackStaticLen {
		return len(hpackStaticNames[i-1])
	}
	return d.entry(int(i - hpackStaticLen)).nameLen
}

// entry returns the k-th newest dynamic entry (k from 1).
func (d *statusDecoder) entry(k int) *hpackEntry {
	return &d.tab[(d.first+d.n-k)%hpackMaxEntries]
}

// add inserts an entry, evicting the oldest ones to make room; an entry
// larger than the whole table empties it and is not added (§4.4).
func (d *statusDecoder) add(e hpackEntry) {
	if e.size > d.maxSize {
		d.evict(d.maxSize)
		return
	}
	d.evict(d.maxSize - e.size)
	d.tab[(d.first+d.n)%hpackMaxEntries] = e
	d.n++
	d.size += e.size
}

// evict drops the oldest entries until the table holds at most limit
// bytes.
func (d *statusDecoder) evict(limit int) {
	for d.size > limit && d.n > 0 {
		d.size -= d.tab[d.first].size
		d.first = (d.first + 1) % hpackMaxEntries
		d.n--
	}
}

// str reads a string literal; with decode, a Huffman-coded one of up to
// hpackLongStr bytes is decoded into d.huff (valid until the next call),
// else returned as sent.
func (d *statusDecoder) str(p []byte, decode bool) (s, rest []byte, err error) {
	s, huffman, rest, err := hpackStr(p)
	if err != nil || !huffman || !decode || len(s) > hpackLongStr {
		return s, rest, err
	}
	d.huff.Reset()
	if _, err := hpack.HuffmanDecode(&d.huff, s); err != nil {
		return nil, nil, errHpack
	}
	return d.huff.Bytes(), rest, nil
}

// strLen reads a string literal and returns its decoded length, from the
// cache of recent Huffman-coded strings when it is there.
func (d *statusDecoder) strLen(p []byte) (n int, rest []byte, err error) {
	s, huffman, rest, err := hpackStr(p)
	if err != nil || !huffman || len(s) == 0 {
		return len(s), rest, err
	}
	if len(s) > hpackLongStr {
		return (8*len(s) - 7) / 30, rest, nil // at least this long: above any table
	}
	var set *[2]huffLen
	if len(s) <= hpackLenMax {
		// A hash of the whole string: nginx's date and last-modified
		// have the same length, start and end.
		set = &d.lens[maphash.Bytes(d.seed, s)%hpackLenCache]
		if bytes.Equal(set[0].enc, s) {
			return set[0].n, rest, nil
		}
		if bytes.Equal(set[1].enc, s) {
			set[0], set[1] = set[1], set[0]
			return set[0].n, rest, nil
		}
	}
	d.huff.Reset()
	if _, err := hpack.HuffmanDecode(&d.huff, s); err != nil {
		return 0, nil, errHpack
	}
	if set != nil {
		// The older entry's storage takes the new string.
		set[0], set[1] = set[1], set[0]
		set[0].enc, set[0].n = append(set[0].enc[:0], s...), d.huff.Len()
	}
	return d.huff.Len(), rest, nil
}

// hpackStr reads a string literal (§5.2) as sent.
func hpackStr(p []byte) (s []byte, huffman bool, rest []byte, err error) {
	if len(p) == 0 {
		return nil, false, nil, errHpack
	}
	huffman = p[0]&0x80 != 0
	n, p, err := hpackInt(p, 7)
	if err != nil {
		return nil, false, nil, err
	}
	if uint64(len(p)) < n {
		return nil, false, nil, errHpack
	}
	return p[:n], huffman, p[n:], nil
}

// hpackInt reads an integer with an n-bit prefix (§5.1).
func hpackInt(p []byte, n uint8) (v uint64, rest []byte, err error) {
	if len(p) == 0 {
		return 0, nil, errHpack
	}
	mask := uint64(1)<<n - 1
	v = uint64(p[0]) & mask
	p = p[1:]
	if v < mask {
		return v, p, nil
	}
	for shift := uint(0); len(p) > 0; shift += 7 {
		if shift > 28 {
			return 0, nil, errHpack // beyond any size or index of a sane block
		}
		b := p[0]
		p = p[1:]
		v += uint64(b&0x7f) << shift
		if b&0x80 == 0 {
			return v, p, nil
		}
	}
	return 0, nil, errHpack
}

// statusValue parses a :status value: three digits, else 0.
func statusValue(v []byte) int {
	if len(v) != 3 {
		return 0
	}
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// hpackStaticNames are the names of the static table (RFC 7541
// Appendix A), for the sizes of entries that reuse them.
var hpackStaticNames = [hpackStaticLen]string{
	":authority", ":method", ":method", ":path", ":path", ":scheme", ":scheme",
	":status", ":status", ":status", ":status", ":status", ":status", ":status",
	"accept-charset", "accept-encoding", "accept-language", "accept-ranges", "accept",
	"access-control-allow-origin", "age", "allow", "authorization", "cache-control",
	"content-disposition", "content-encoding", "content-language", "content-length",
	"content-location", "content-range", "content-type", "cookie", "date", "etag",
	"expect", "expires", "from", "host", "if-match", "if-modified-since", "if-none-match",
	"if-range", "if-unmodified-since", "last-modified", "link", "location", "max-forwards",
	"proxy-authenticate", "proxy-authorization", "range", "referer", "refresh",
	"retry-after", "server", "set-cookie", "strict-transport-security",
	"transfer-encoding", "user-agent", "vary", "via", "www-authenticate",
}
