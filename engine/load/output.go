package load

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/benchflow/benchflow/engine/measure"
)

// reopened explains a keep-alive load's connect count above its
// connections: " (64 + 192 reopened after the server closed them:
// keep-alive limit?)", or "" when nothing was reopened.
func reopened(r *Result, connects int64) string {
	if r.Close || r.Reconnects <= 0 {
		return ""
	}
	why := "after the server closed them: keep-alive limit?"
	if e := r.ErrorsBy; e["read"]+e["write"]+e["timeout"]+e["parse"] > 0 {
		why = "after the server closed them (keep-alive limit?) or after an error"
	}
	return fmt.Sprintf(" (%d + %d reopened %s)", connects-r.Reconnects, r.Reconnects, why)
}

// WriteText prints r in wrk's shape: the thread stats table, with latency
// the "Latency Distribution" percentile lines (50%, 75%, 90%, 99%, plus
// 99.9% and 99.99%), the totals, socket errors, "Requests/sec:" and
// "Transfer/sec:". Open-loop results add the uncorrected percentiles and
// how far sends fell behind schedule; a rate that was not held prints a
// WARNING line.
func WriteText(w io.Writer, r *Result, latency bool) error {
	if r == nil {
		return fmt.Errorf("writing text summary: no result")
	}
	var b strings.Builder
	target := targetList(r.Targets)
	kind := "test"
	if r.Tag == "warm" {
		kind = "warm-up"
	}
	if r.MaxRequests > 0 && r.TimeLimit <= 0 {
		// Bounded by -n alone: the header says so, not a wall time that
		// is only known afterwards (and shown on the totals line).
		fmt.Fprintf(&b, "Running %d-request %s @ %s\n", r.MaxRequests, kind, target)
	} else {
		fmt.Fprintf(&b, "Running %s %s @ %s\n", fmtDuration(r.Duration), kind, target)
	}
	fmt.Fprintf(&b, "  %d threads and %d connections", r.Threads, r.Connections)
	if r.Close {
		b.WriteString(" (new connection per request)")
	}
	if r.TargetRate > 0 {
		fmt.Fprintf(&b, ", target rate %g req/s", r.TargetRate)
	}
	b.WriteString("\n")
	switch r.Protocol {
	case ProtoH2, ProtoH2C:
		streams := "streams"
		if r.Streams == 1 {
			streams = "stream"
		}
		fmt.Fprintf(&b, "  HTTP/2 (%s), up to %d %s per connection (at most %d seen in flight)\n", r.Protocol, r.Streams, streams, r.MaxInFlight)
		if r.Naps > 0 {
			fmt.Fprintf(&b, "  %d naps, %s each on average (a response arriving during one is read up to that late)\n", r.Naps, fmtMicros(float64(r.NapMean().Nanoseconds())/1e3))
		}
	case ProtoH3:
		streams := "concurrent streams"
		if r.Streams == 1 {
			streams = "stream at a time"
		}
		fmt.Fprintf(&b, "  HTTP/3 over QUIC, %d %s per connection\n", r.Streams, streams)
	}
	if r.TLSVersion != "" {
		fmt.Fprintf(&b, "  %s, %s, ALPN %s\n", r.TLSVersion, r.TLSCipher, cmp.Or(r.ALPN, "none"))
	}
	b.WriteString("  Thread Stats   Avg      Stdev     Max   +/- Stdev\n")
	if h := r.Latency; h != nil && h.TotalCount() > 0 {
		mean, sd := h.Mean(), h.StdDev()
		fmt.Fprintf(&b, "    %-10s%8s%10s%9s%8.2f%%\n", "Latency",
			fmtMicros(mean), fmtMicros(sd), fmtMicros(float64(h.Max())), withinStdev(h, mean, sd))
	}
	if rates := threadRates(r); len(rates) > 0 {
		mean, sd, mx, within := stats(rates)
		fmt.Fprintf(&b, "    %-10s%8s%10s%9s%8.2f%%\n", "Req/Sec",
			fmtMetric(mean), fmtMetric(sd), fmtMetric(mx), within)
	}
	if latency && r.Latency != nil && r.Latency.TotalCount() > 0 {
		if r.Uncorrected != nil {
			b.WriteString("  Latency Distribution (corrected: from the intended send time)\n")
		} else {
			b.WriteString("  Latency Distribution\n")
		}
		for _, p := range []float64{50, 75, 90, 99, 99.9, 99.99} {
			label := fmt.Sprintf("%g%%", p)
			fmt.Fprintf(&b, "%8s%10s\n", label, fmtMicros(float64(r.Latency.ValueAtQuantile(p))))
		}
		if u := r.Uncorrected; u != nil && u.TotalCount() > 0 {
			fmt.Fprintf(&b, "  Uncorrected latency (from the actual send): p50 %s, p90 %s, p99 %s, p99.9 %s, max %s\n",
				fmtMicros(float64(u.ValueAtQuantile(50))), fmtMicros(float64(u.ValueAtQuantile(90))),
				fmtMicros(float64(u.ValueAtQuantile(99))), fmtMicros(float64(u.ValueAtQuantile(99.9))),
				fmtMicros(float64(u.Max())))
		}
	}
	if c := r.Connect; c != nil && c.TotalCount() > 0 && (r.Close || latency) {
		fmt.Fprintf(&b, "  Connect: %d connections%s, mean %s, p50 %s, p99 %s, max %s\n", c.TotalCount(), reopened(r, c.TotalCount()),
			fmtMicros(c.Mean()), fmtMicros(float64(c.ValueAtQuantile(50))),
			fmtMicros(float64(c.ValueAtQuantile(99))), fmtMicros(float64(c.Max())))
	}
	if r.TargetRate > 0 {
		fmt.Fprintf(&b, "  Schedule: sends behind by %s on average, %s at most; %d sends more than 1ms late\n",
			fmtMicros(float64(r.MeanBehind)/1e3), fmtMicros(float64(r.MaxBehind)/1e3), r.LateSends)
		if r.Intended > 0 {
			fmt.Fprintf(&b, "  Intended sends: %d; %d with an outcome, %d missed (never sent: connections busy), %d unfinished at the end\n",
				r.Intended, r.Requests+r.Errors-r.ErrorsBy["http"], r.Missed, r.Unfinished)
		}
	}
	// As wrk: the time the load took until every connection stopped
	// (the rates below are over the measured Duration).
	took := r.Duration
	if r.Elapsed > 0 {
		took = r.Elapsed
	}
	fmt.Fprintf(&b, "  %d requests in %s, %s read\n", r.Requests, fmtDuration(took), fmtBytes(float64(r.Bytes)))
	e := r.ErrorsBy
	if e["connect"]+e["read"]+e["write"]+e["timeout"]+e["parse"] > 0 {
		fmt.Fprintf(&b, "  Socket errors: connect %d, read %d, write %d, timeout %d, parse %d\n",
			e["connect"], e["read"], e["write"], e["timeout"], e["parse"])
		for _, k := range ErrorClasses {
			if msg := r.ErrorSample[k]; msg != "" {
				fmt.Fprintf(&b, "    first %s error: %s\n", k, msg)
			}
		}
	}
	if e["http"] > 0 {
		fmt.Fprintf(&b, "  Non-2xx or 3xx responses: %d\n", e["http"])
	}
	if e["check"] > 0 {
		fmt.Fprintf(&b, "  Responses failing a check: %d (first: %s)\n", e["check"], r.ErrorSample["check"])
	}
	if r.Reconnects > 0 {
		fmt.Fprintf(&b, "  Reconnects: %d\n", r.Reconnects)
	}
	if r.H3ZeroRTT {
		var conns int64
		if r.Connect != nil {
			conns = r.Connect.TotalCount()
		}
		fmt.Fprintf(&b, "  0-RTT: %d of %d connections sent early data the server accepted\n", r.Used0RTT, conns)
	}
	fmt.Fprintf(&b, "Requests/sec: %10.2f\n", r.RPS())
	tps := 0.0
	if r.Duration > 0 {
		tps = float64(r.Bytes) / r.Duration.Seconds()
	}
	fmt.Fprintf(&b, "Transfer/sec: %10s\n", fmtBytes(tps))
	if per := r.CPUPerRequest(); per > 0 && r.Duration > 0 {
		fmt.Fprintf(&b, "Loader CPU:   %10s per request (%s in %s: %.0f%% of one core)\n", fmtMicros(float64(per.Nanoseconds())/1e3),
			fmtDuration(r.LoaderCPU.Round(time.Millisecond)), fmtDuration(r.Duration), 100*r.LoaderCPU.Seconds()/r.Duration.Seconds())
	}
	if r.UDPRecvBuf > 0 || r.UDPSendBuf > 0 {
		gso := "GSO off"
		if r.UDPGSO {
			gso = "GSO on"
		}
		fmt.Fprintf(&b, "UDP buffers:  receive %s, send %s (quic-go asks for %s), %s\n", fmtBytes(float64(r.UDPRecvBuf)), fmtBytes(float64(r.UDPSendBuf)), fmtBytes(measure.UDPWantBuffer), gso)
	}
	if r.Warning != "" {
		fmt.Fprintf(&b, "WARNING: %s\n", r.Warning)
	}
	if r.UDPBuffersShort() {
		fmt.Fprintf(&b, "WARNING: %s\n", UDPBufferAdvice)
	}
	writeThresholds(&b, r.Thresholds)
	_, err := io.WriteString(w, b.String())
	return err
}

// UDPBufferAdvice is what to do when HTTP/3's UDP buffers came out below
// what quic-go asks for (the summary's warning; quic-go's own is off).
const UDPBufferAdvice = "the UDP buffers are below the 7 MiB quic-go asks for, so a burst of packets the socket cannot hold is dropped and resent: " +
	"raise net.core.rmem_max and net.core.wmem_max to 7500000 (a tune step: sysctl = { \"net.core.rmem_max\" = \"7500000\", \"net.core.wmem_max\" = \"7500000\" }) or run as root"

// withinStdev is the percentage of values within mean ± sd (wrk's
// "+/- Stdev").
func withinStdev(h *hdrhistogram.Histogram, mean, sd float64) float64 {
	if h.TotalCount() == 0 {
		return 0
	}
	var in int64
	for _, bar := range h.Distribution() {
		if bar.Count > 0 && float64(bar.From) >= mean-sd && float64(bar.From) <= mean+sd {
			in += bar.Count
		}
	}
	return 100 * float64(in) / float64(h.TotalCount())
}

// threadRates are per-thread requests/s of each full interval (wrk's
// Req/Sec row divides the rate among its threads).
func threadRates(r *Result) []float64 {
	var out []float64
	threads := max(r.Threads, 1)
	for _, iv := range r.Intervals {
		if iv.Duration < 500*time.Millisecond {
			continue
		}
		out = append(out, float64(iv.Requests)/iv.Duration.Seconds()/float64(threads))
	}
	return out
}

func stats(xs []float64) (mean, sd, mx, within float64) {
	for _, x := range xs {
		mean += x
		mx = math.Max(mx, x)
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	if len(xs) > 1 {
		sd = math.Sqrt(sd / float64(len(xs)-1))
	} else {
		sd = 0
	}
	n := 0
	for _, x := range xs {
		if x >= mean-sd && x <= mean+sd {
			n++
		}
	}
	return mean, sd, mx, 100 * float64(n) / float64(len(xs))
}

// fmtMicros formats microseconds the way wrk does (us, ms, s, m).
func fmtMicros(us float64) string {
	switch {
	case us < 1000:
		return fmt.Sprintf("%.2fus", us)
	case us < 1e6:
		return fmt.Sprintf("%.2fms", us/1e3)
	case us < 60e6:
		return fmt.Sprintf("%.2fs", us/1e6)
	default:
		return fmt.Sprintf("%.2fm", us/60e6)
	}
}

func fmtMetric(v float64) string {
	switch {
	case v < 1e3:
		return fmt.Sprintf("%.2f", v)
	case v < 1e6:
		return fmt.Sprintf("%.2fk", v/1e3)
	case v < 1e9:
		return fmt.Sprintf("%.2fM", v/1e6)
	default:
		return fmt.Sprintf("%.2fG", v/1e9)
	}
}

func fmtBytes(v float64) string {
	units := []string{"B", "KB", "MB", "GB", "TB"}
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.2f%s", v, units[i])
}

func fmtDuration(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return d.String()
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

// targetList names the targets for the header: all of a few, or the first
// ones and how many more (a request script can make thousands).
func targetList(ts []string) string {
	const shown = 3
	if len(ts) <= shown+1 {
		return strings.Join(ts, ", ")
	}
	return fmt.Sprintf("%s and %d more URLs", strings.Join(ts[:shown], ", "), len(ts)-shown)
}

// writeThresholds prints the outcomes of `load --threshold`, each with
// its value: "Thresholds: 1 of 2 failed" and a line per threshold.
func writeThresholds(b *strings.Builder, ts []measure.ThresholdResult) {
	if len(ts) == 0 {
		return
	}
	failed := 0
	for _, t := range ts {
		if !t.OK {
			failed++
		}
	}
	if failed == 0 {
		fmt.Fprintf(b, "Thresholds:   all %d met\n", len(ts))
	} else {
		fmt.Fprintf(b, "Thresholds:   %d of %d FAILED\n", failed, len(ts))
	}
	for _, t := range ts {
		mark := "ok    "
		if !t.OK {
			mark = "FAILED"
		}
		fmt.Fprintf(b, "  %s  %-20s  (was %s)\n", mark, t.Expr, t.Text)
	}
}
