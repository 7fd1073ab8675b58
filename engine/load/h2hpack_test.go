package load

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/http2/hpack"
)

// TestStatusDecoderFollowsEncoder: the blocks of a real HPACK encoder
// (dynamic table on, Huffman strings, entries evicted, table resized)
// decode to the :status the reference decoder reads, including statuses
// that only the dynamic table holds after their first use.
func TestStatusDecoderFollowsEncoder(t *testing.T) {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	ref := hpack.NewDecoder(hpackTableLimit, nil)
	d := newStatusDecoder()
	statuses := []string{"200", "201", "302", "404", "201", "503", "302", "200", "418"}
	for i := range 400 {
		buf.Reset()
		switch i {
		case 100:
			enc.SetMaxDynamicTableSize(256) // small: every block evicts
		case 200:
			enc.SetMaxDynamicTableSize(0)
		case 250:
			enc.SetMaxDynamicTableSize(4096)
		}
		want := statuses[i%len(statuses)]
		fields := []hpack.HeaderField{
			{Name: ":status", Value: want},
			{Name: "server", Value: "nginx/1.22.1"},
			{Name: "date", Value: fmt.Sprintf("Wed, 02 Dec 2026 05:%02d:%02d GMT", i/60%60, i%60)},
			{Name: "x-request", Value: strings.Repeat("r", i%50)},
			{Name: "x-secret", Value: "s", Sensitive: true},
			{Name: "content-length", Value: fmt.Sprint(i)},
		}
		if i%37 == 36 {
			// Longer than the decoder decodes (hpackLongStr): too large
			// for the table, which it empties on both sides.
			fields = append(fields, hpack.HeaderField{Name: "x-long", Value: strings.Repeat("a", 60000)})
		}
		for _, f := range fields {
			if err := enc.WriteField(f); err != nil {
				t.Fatal(err)
			}
		}
		hf, err := ref.DecodeFull(buf.Bytes())
		if err != nil || hf[0].Value != want {
			t.Fatalf("block %d: the reference decoder read %v, %v", i, hf, err)
		}
		got, err := d.decode(buf.Bytes())
		if err != nil {
			t.Fatalf("block %d (% x): %v", i, buf.Bytes(), err)
		}
		if fmt.Sprint(got) != want {
			t.Fatalf("block %d: status %d, want %s", i, got, want)
		}
		if d.size > d.maxSize {
			t.Fatalf("block %d: table holds %d bytes, above its maximum %d", i, d.size, d.maxSize)
		}
		if c := d.huff.Cap(); c > 48<<10 {
			t.Fatalf("block %d: the Huffman buffer grew to %d bytes for a string the table cannot hold", i, c)
		}
	}
}

// TestStatusDecoderBlocks: hand-made blocks, valid and invalid.
func TestStatusDecoderBlocks(t *testing.T) {
	cases := []struct {
		name   string
		block  []byte
		status int
		bad    bool
	}{
		{"static 200", []byte{0x88}, 200, false},
		{"static 500", []byte{0x8e}, 500, false},
		{"status not first", []byte{0x82, 0x88}, 0, false},
		{"literal new name", append([]byte{0x00, 7}, append([]byte(":status"), append([]byte{3}, "299"...)...)...), 299, false},
		{"literal indexed name", append([]byte{0x08, 3}, "302"...), 302, false},
		{"status not a number", append([]byte{0x08, 3}, "2x0"...), 0, false},
		{"size update first", []byte{0x20, 0x88}, 200, false},
		{"size update after a field", []byte{0x88, 0x20}, 0, true},
		{"size update above the limit", []byte{0x3f, 0xe2, 0x1f}, 0, true}, // 31 + 0x62 + 0x1f<<7 = 4097
		{"index 0", []byte{0x80}, 0, true},
		{"index past the tables", []byte{0xbe}, 0, true}, // 62: empty dynamic table
		{"string cut short", []byte{0x08, 5, '2', '0'}, 0, true},
		{"integer cut short", []byte{0xff}, 0, true},
		{"integer too long", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 0, true},
		{"bad huffman", []byte{0x08, 0x81, 0x00}, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := newStatusDecoder().decode(c.block)
			if (err != nil) != c.bad {
				t.Fatalf("error %v, want error %v", err, c.bad)
			}
			if !c.bad && got != c.status {
				t.Errorf("status %d, want %d", got, c.status)
			}
		})
	}
}

// FuzzStatusDecoder: any bytes, decoded twice on one decoder (the second
// time against the table the first left), never panic and keep the table
// within its bounds; where the reference decoder accepts a block, the
// statuses agree.
func FuzzStatusDecoder(f *testing.F) {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for _, fl := range [][2]string{{":status", "200"}, {":status", "302"}, {"server", "nginx"}, {"date", "Wed, 02 Dec 2026 05:00:00 GMT"}} {
		enc.WriteField(hpack.HeaderField{Name: fl[0], Value: fl[1]})
	}
	f.Add(buf.Bytes())
	f.Add([]byte{0x88})
	f.Add([]byte{0x20, 0x3f, 0xe1, 0x1f, 0x88})
	f.Fuzz(func(t *testing.T, b []byte) {
		d := newStatusDecoder()
		ref := hpack.NewDecoder(hpackTableLimit, nil)
		for range 2 {
			got, err := d.decode(b)
			if d.size > d.maxSize || d.n > hpackMaxEntries || d.size < 0 {
				t.Fatalf("table of %d entries, %d bytes, maximum %d", d.n, d.size, d.maxSize)
			}
			hf, rerr := ref.DecodeFull(b)
			if err != nil || rerr != nil {
				return // the two may differ on what they reject; the tables no longer agree
			}
			want := 0
			if len(hf) > 0 && hf[0].Name == ":status" {
				want = statusValue([]byte(hf[0].Value))
			}
			if got != want {
				t.Fatalf("status %d, the reference decoder read %v", got, hf)
			}
		}
	})
}
