package load_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/benchflow/benchflow/engine/load"
)

// Run a closed-loop load of a fixed number of requests against a local
// server and read the counts.
func ExampleRun() {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello\n")
	})}
	go srv.Serve(ln)
	defer srv.Close()

	res, err := load.Run(context.Background(), load.Options{
		Targets:     []load.Target{{URL: "http://" + ln.Addr().String() + "/"}},
		Connections: 4,
		Requests:    1000,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Requests, "requests,", res.Errors, "errors, status 200:", res.Status[200])
	// Output: 1000 requests, 0 errors, status 200: 1000
}

// WriteText prints a result the way wrk does.
func ExampleWriteText() {
	lat := hdrhistogram.New(1, 10_000_000, 3)
	for i := int64(1); i <= 1000; i++ {
		lat.RecordValue(100 + i) // 101…1100 µs
	}
	res := &load.Result{
		Targets: []string{"http://127.0.0.1:8080/"}, Duration: 10 * time.Second,
		Connections: 64, Threads: 1, Requests: 1000, Bytes: 240_000,
		Latency: lat, Status: map[int]int64{200: 1000}, ErrorsBy: map[string]int64{},
	}
	load.WriteText(os.Stdout, res, true)
	// Output:
	// Running 10s test @ http://127.0.0.1:8080/
	//   1 threads and 64 connections
	//   Thread Stats   Avg      Stdev     Max   +/- Stdev
	//     Latency   600.50us  288.67us   1.10ms   57.80%
	//   Latency Distribution
	//      50%  600.00us
	//      75%  850.00us
	//      90%    1.00ms
	//      99%    1.09ms
	//    99.9%    1.10ms
	//   99.99%    1.10ms
	//   1000 requests in 10s, 234.38KB read
	// Requests/sec:     100.00
	// Transfer/sec:    23.44KB
}
