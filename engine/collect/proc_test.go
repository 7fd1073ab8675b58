package collect

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseStat(t *testing.T) {
	// A comm with spaces and parentheses, as a process may name itself.
	line := "4242 (we(ird) na)me) S 1 4242 4242 0 -1 4194560 1234 0 0 0 350 120 30 5 20 0 7 0 98765 123456789 2000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	got, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := procStat{comm: "we(ird) na)me", utime: 350, stime: 120, threads: 7, starttime: 98765, ppid: 1, ctime: 35, flags: 4194560, rssPages: 2000}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for _, bad := range []string{"", "12 nocomm S 1", "12 (x) S 1 2 3", "12 (x) S 1 2 3 4 5 6 7 8 9 10 x 12 13 14 15 16 17 18 19 20"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) succeeded", bad)
		}
	}
}

func TestParseStatm(t *testing.T) {
	rss, err := parseStatmRSS([]byte("2000 300 100 10 0 50 0\n"))
	if err != nil || rss != 300*pageSize {
		t.Errorf("rss = %d, %v; want %d", rss, err, 300*pageSize)
	}
	if _, err := parseStatmRSS([]byte("2000")); err == nil {
		t.Error("short statm accepted")
	}
}

func TestParseCtxSwitches(t *testing.T) {
	status := "Name:\tnginx\nThreads:\t1\nvoluntary_ctxt_switches:\t150\nnonvoluntary_ctxt_switches:\t7\n"
	v, n, ok := parseCtxSwitches([]byte(status))
	if !ok || v != 150 || n != 7 {
		t.Errorf("got %d %d %v", v, n, ok)
	}
	if _, _, ok := parseCtxSwitches([]byte("Name:\tx\n")); ok {
		t.Error("missing counters reported as found")
	}
}

func TestParseProcStat(t *testing.T) {
	b := []byte("cpu  100 5 50 800 10 1 4 2 30 0\ncpu0 50 2 25 400 5 0 2 1 0 0\nintr 1\n")
	got, err := parseProcStat(b)
	if err != nil {
		t.Fatal(err)
	}
	want := cpuTimes{user: 100, nice: 5, system: 50, idle: 800, iowait: 10, irq: 1, softirq: 4, steal: 2}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got.total() != 972 {
		t.Errorf("total = %d (guest must not be counted twice)", got.total())
	}
	if _, err := parseProcStat([]byte("intr 1 2 3\n")); err == nil {
		t.Error("no cpu line accepted")
	}
}

func TestParseNetDev(t *testing.T) {
	b := []byte(`Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0          0
  eth0: 123456789 4321  0    0    0     0          0         0    987654 321    0    0    0     0       0          0
`)
	m := map[string]ifCounters{"stale": {}}
	if err := parseNetDev(b, m); err != nil {
		t.Fatal(err)
	}
	want := map[string]ifCounters{
		"lo":   {rxBytes: 1000, rxPackets: 10, txBytes: 1000, txPackets: 10},
		"eth0": {rxBytes: 123456789, rxPackets: 4321, txBytes: 987654, txPackets: 321},
	}
	if d := cmp.Diff(want, m, cmp.AllowUnexported(ifCounters{})); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if err := parseNetDev([]byte("h\nh\n  lo 1 2 3\n"), m); err == nil {
		t.Error("line without colon accepted")
	}
}

func TestCompileNames(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "empty process name"},
		{"/[/", "compiling process pattern \"/[/\""},
		{"usr/bin/nginx", "contains a slash"},
	} {
		_, err := compileNames([]string{c.in})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("compileNames(%q) = %v, want %q", c.in, err, c.want)
		}
	}
	ms, err := compileNames([]string{"nginx", "/docker-(proxy|init)/"})
	if err != nil || len(ms) != 2 || ms[0].name != "nginx" || ms[1].re == nil {
		t.Errorf("compileNames = %+v, %v", ms, err)
	}
}
