package results

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/benchflow/benchflow/engine/units"
)

// Decoded-size limits of the tables benchflow reads (docs/results.md,
// "Limits"). A table file is small on disk but may decode to much more:
// a dictionary-encoded string column repeats one value on every row, a
// compressed buffer expands. Every reader checks what a file could decode
// to before decoding it, and counts what it decodes.
const (
	// MaxValueBytes bounds one string value of a table.
	MaxValueBytes = 1 << 20
	// MaxTableBytes bounds the decoded size of one table file: the sum
	// over its columns of the bytes of every value (strings at their
	// length, numbers at their width), and the memory held while
	// decoding it.
	MaxTableBytes = 2 << 30
)

// LimitError is a table that would decode past a limit.
type LimitError struct {
	Table, Column string
	What          string // "a value of N bytes", "N bytes decoded"
	Limit         int64
	PerValue      bool
}

func (e *LimitError) Error() string {
	col := ""
	if e.Column != "" {
		col = ", column " + e.Column
	}
	per := "per table file"
	if e.PerValue {
		per = "per value"
	}
	return fmt.Sprintf("table %s%s: %s, over the limit of %s %s (docs/results.md#limits)", e.Table, col, e.What, units.FormatSize(e.Limit), per)
}

// checkDecodedParquet bounds what a Parquet file would decode to, from
// its footer and its dictionary pages only: a dictionary's longest value
// must be at most MaxValueBytes, and the sum over column chunks of the
// values' decoded bytes (a dictionary-encoded string chunk counts its
// longest value once per row) at most MaxTableBytes.
func checkDecodedParquet(pf *file.Reader, table string) error {
	md := pf.MetaData()
	sch := md.Schema
	perCol := make([]int64, sch.NumColumns())
	var total int64
	for i := 0; i < md.NumRowGroups(); i++ {
		rg := md.RowGroup(i)
		for c := 0; c < rg.NumColumns() && c < len(perCol); c++ {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				return err
			}
			col := sch.Column(c)
			n := cc.NumValues()
			var est int64
			switch col.PhysicalType() {
			case parquet.Types.Boolean:
				est = n
			case parquet.Types.Int32, parquet.Types.Float:
				est = 4 * n
			case parquet.Types.Int64, parquet.Types.Double:
				est = 8 * n
			case parquet.Types.Int96:
				est = 12 * n
			case parquet.Types.FixedLenByteArray:
				est = int64(max(col.TypeLength(), 0)) * n
			case parquet.Types.ByteArray:
				est = cc.TotalUncompressedSize()
				longest := int64(0)
				if cc.HasDictionaryPage() {
					l, err := longestDictValue(pf, i, c)
					if err != nil {
						return fmt.Errorf("column %s of row group %d: %w", col.Name(), i, err)
					}
					longest = l
				}
				for _, e := range cc.Encodings() {
					// Prefix-encoded values may each be as long as the
					// limit allows, whatever the page's size.
					if e == parquet.Encodings.DeltaByteArray {
						longest = MaxValueBytes
					}
				}
				if longest > MaxValueBytes {
					return &LimitError{Table: table, Column: col.Name(), What: fmt.Sprintf("a value of %d bytes", longest), Limit: MaxValueBytes, PerValue: true}
				}
				if longest > 0 {
					est = sat(est, satMul(n, longest))
				}
			}
			perCol[c] = sat(perCol[c], est)
			total = sat(total, est)
			if total > MaxTableBytes {
				return &LimitError{Table: table, Column: largest(sch, perCol), What: "its values could decode to " + units.FormatSize(total), Limit: MaxTableBytes}
			}
		}
	}
	return nil
}

// largest names the column of schema with the most decoded bytes.
func largest(s *schema.Schema, perCol []int64) string {
	best := 0
	for c := range perCol {
		if perCol[c] > perCol[best] {
			best = c
		}
	}
	return s.Column(best).Name()
}

// sat adds without overflowing.
func sat(a, b int64) int64 {
	if a > (1<<62) || b > (1<<62) {
		return 1 << 62
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > (1<<62)/b {
		return 1 << 62
	}
	return a * b
}

// longestDictValue reads the dictionary page of column c of row group rg
// (its size was bounded by the footer check) and returns the length of
// its longest value.
func longestDictValue(pf *file.Reader, rg, c int) (int64, error) {
	pr, err := pf.RowGroup(rg).GetColumnPageReader(c)
	if err != nil {
		return 0, err
	}
	defer pr.Close()
	if !pr.Next() {
		return 0, pr.Err()
	}
	p := pr.Page()
	if p.Type() != file.PageTypeDictionaryPage {
		return 0, nil
	}
	// PLAIN byte arrays: a 4-byte little-endian length, then the bytes.
	data := p.Data()
	var longest int64
	for off, i := 0, int32(0); i < p.NumValues(); i++ {
		if off+4 > len(data) {
			return 0, fmt.Errorf("the dictionary page is cut short")
		}
		l := int64(binary.LittleEndian.Uint32(data[off:]))
		if l > int64(len(data)-off-4) {
			return 0, fmt.Errorf("a dictionary value of %d bytes runs past its page", l)
		}
		longest = max(longest, l)
		off += 4 + int(l)
	}
	return longest, nil
}

// checkDecodedRecord bounds the strings of a decoded record before they
// are converted to rows: each value at most MaxValueBytes, and the
// file's decoded bytes so far (*total, strings at their length once per
// row, numbers at their width) at most MaxTableBytes.
func checkDecodedRecord(rec arrow.RecordBatch, table string, total *int64) error {
	for c := 0; c < int(rec.NumCols()); c++ {
		name := rec.Schema().Field(c).Name
		var bytes, longest int64
		switch a := rec.Column(c).(type) {
		case *array.String:
			for i := 0; i < a.Len(); i++ {
				l := int64(a.ValueLen(i))
				bytes += l
				longest = max(longest, l)
			}
		case *array.Dictionary:
			d, ok := a.Dictionary().(*array.String)
			if !ok {
				bytes = int64(a.Len()) * 4
				break
			}
			lens := make([]int64, d.Len())
			for i := range lens {
				lens[i] = int64(d.ValueLen(i))
				longest = max(longest, lens[i])
			}
			if longest > MaxValueBytes {
				break
			}
			for i := 0; i < a.Len(); i++ {
				if a.IsValid(i) {
					if k := a.GetValueIndex(i); k >= 0 && k < len(lens) {
						bytes += lens[k]
					}
				}
			}
		default:
			w := 8
			if fw, ok := a.DataType().(arrow.FixedWidthDataType); ok {
				w = max(1, fw.BitWidth()/8)
			}
			bytes = int64(a.Len()) * int64(w)
		}
		if longest > MaxValueBytes {
			return &LimitError{Table: table, Column: name, What: fmt.Sprintf("a value of %d bytes", longest), Limit: MaxValueBytes, PerValue: true}
		}
		*total = sat(*total, bytes)
		if *total > MaxTableBytes {
			return &LimitError{Table: table, Column: name, What: "its values decode to more than " + units.FormatSize(*total), Limit: MaxTableBytes}
		}
	}
	return nil
}

// limitAlloc is an allocator that refuses (by panicking with a
// *LimitError, which the readers recover) to hold more than limit bytes
// at once: what a compressed Arrow IPC buffer or a Parquet page claims
// to decompress to is allocated through it.
type limitAlloc struct {
	memory.Allocator
	table string
	limit int64
	used  atomic.Int64
}

func newLimitAlloc(mem memory.Allocator, table string) *limitAlloc {
	return &limitAlloc{Allocator: mem, table: table, limit: MaxTableBytes}
}

func (l *limitAlloc) take(n int64) {
	if u := l.used.Add(n); n > 0 && u > l.limit {
		l.used.Add(-n)
		panic(&LimitError{Table: l.table, What: "decoding it needs more than " + units.FormatSize(u) + " of memory at once", Limit: l.limit})
	}
}

func (l *limitAlloc) Allocate(size int) []byte {
	l.take(int64(size))
	return l.Allocator.Allocate(size)
}

func (l *limitAlloc) Reallocate(size int, b []byte) []byte {
	l.take(int64(size - len(b)))
	return l.Allocator.Reallocate(size, b)
}

func (l *limitAlloc) Free(b []byte) {
	l.used.Add(-int64(len(b)))
	l.Allocator.Free(b)
}
