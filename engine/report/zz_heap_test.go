package report

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/results"
)

func TestZZHeap(t *testing.T) {
	dir := os.Getenv("HEAP_RUN")
	if dir == "" {
		t.Skip()
	}
	var peak uint64
	stop := make(chan bool)
	go func() {
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			default:
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak {
				peak = ms.HeapAlloc
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	run, err := results.ReadRunWith(dir, results.ReadOptions{StreamTables: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Summarize(run, Options{NoSeries: os.Getenv("SERIES") == ""})
	if err != nil {
		t.Fatal(err)
	}
	close(stop)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("cells %d peak heap %d MB, live after %d MB, total alloc %d MB\n", len(s.Cells), peak>>20, ms.HeapAlloc>>20, ms.TotalAlloc>>20)
	f, _ := os.Create("/tmp/hmem-heap.prof")
	pprof.Lookup("allocs").WriteTo(f, 0)
	f.Close()
}
