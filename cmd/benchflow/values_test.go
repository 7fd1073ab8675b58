package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// valueCase is one written value and what both a pipeline attribute and
// the flag of the same setting must answer: accepted, or refused with a
// message containing refuse.
type valueCase struct {
	in     string
	refuse string // "" = accepted
}

// valueSides runs in through a pipeline (benchflow validate on a generated
// pipeline) and through the CLI flag (the binary), each made to fail at a
// marker error after the value is read, so an accepted value shows as that
// marker and nothing runs. It returns both outputs.
func valueSides(t *testing.T, pipeline string, flags []string) (pipeOut, flagOut string) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "p.hcl")
	if err := os.WriteFile(p, []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	so, se, _ := robustRun(t, dir, 60*time.Second, "validate", p)
	pipeOut = so + se
	so, se, code := robustRun(t, dir, 60*time.Second, flags...)
	if code == 0 {
		t.Fatalf("benchflow %v: exit 0, want the marker error\n%s%s", flags, so, se)
	}
	return pipeOut, so + se
}

func checkValueSides(t *testing.T, c valueCase, pipeOut, flagOut, pipeMarker, flagMarker string) {
	t.Helper()
	if c.refuse == "" {
		if !strings.Contains(pipeOut, pipeMarker) || !strings.Contains(flagOut, flagMarker) {
			t.Errorf("%q: want it accepted on both sides (reaching the marker)\npipeline:\n%s\nflag:\n%s", c.in, pipeOut, flagOut)
		}
		return
	}
	if !strings.Contains(pipeOut, c.refuse) || !strings.Contains(flagOut, c.refuse) {
		t.Errorf("%q: want both sides to refuse it with %q\npipeline:\n%s\nflag:\n%s", c.in, c.refuse, pipeOut, flagOut)
	}
}

// searchPipeline is a load step searching for capacity with max_probes = 1,
// which the search's one rule refuses after every other setting is read.
func searchPipeline(startRate, probe, precision string) string {
	return fmt.Sprintf(`pipeline "values" {}
provider "local" "host" {}
service "web" {
  provider = "host"
  command  = ["true"]
  port "http" {}
}
step "load" "l" {
  target = "${service.web.url}/"
  search {
    slo        = "p99<10ms"
    start_rate = %s
    probe      = %q
    precision  = %q
    max_probes = 1
  }
}
`, startRate, probe, precision)
}

func searchFlags(startRate, probe, precision string) []string {
	return []string{"load", "--find-max", "--slo", "p99<10ms", "--start-rate", startRate, "--probe", probe,
		"--precision", precision, "--max-probes", "1", "-c", "1", "http://127.0.0.1:1/"}
}

const maxProbesMarker = "must be from 2 to"

// TestValuesDuration: a search's probe and --probe read one duration grammar.
func TestValuesDuration(t *testing.T) {
	for _, c := range []valueCase{
		{"5s", ""},
		{"5", ""}, // a bare number is seconds on both sides
		{"2.5s", ""},
		{"1m", ""},
		{"banana", `"banana" is not a duration (examples: 500ms, 30s, 2m)`},
		{"-5s", `"-5s" must not be negative`},
		{"0.1k", `"0.1k" is not a duration`},
		{"1ms", "must be at least"},
	} {
		po, fo := valueSides(t, searchPipeline("100", c.in, "2%"), searchFlags("100", c.in, "2%"))
		checkValueSides(t, c, po, fo, maxProbesMarker, maxProbesMarker)
	}
}

// TestValuesPercent: a search's precision and --precision read one
// percentage grammar and one bound (above 0, below 100%).
func TestValuesPercent(t *testing.T) {
	for _, c := range []valueCase{
		{"2%", ""},
		{"2", ""},
		{"0.5 %", ""},
		{"99.9%", ""},
		{"150%", `"150%" is not a percentage between 0 and 100% (e.g. "5%")`},
		{"0%", `"0%" is not a percentage between 0 and 100%`},
		{"-2%", `"-2%" is not a percentage between 0 and 100%`},
		{"0.1k", `"0.1k" is not a percentage between 0 and 100%`},
		{"100%", "must be a fraction between 0 and 1"},
	} {
		po, fo := valueSides(t, searchPipeline("100", "5s", c.in), searchFlags("100", "5s", c.in))
		checkValueSides(t, c, po, fo, maxProbesMarker, maxProbesMarker)
	}
}

// TestValuesRate: a search's start_rate and --start-rate are numbers with
// one rule (load.SearchOptions.Validate).
func TestValuesRate(t *testing.T) {
	for _, c := range []valueCase{
		{"100", ""},
		{"1.5", ""},
		{"0.5", "must be at least 1 request per second"},
		{"2e9", "must be at most 1e+09 requests per second"},
	} {
		po, fo := valueSides(t, searchPipeline(c.in, "5s", "2%"), searchFlags(c.in, "5s", "2%"))
		checkValueSides(t, c, po, fo, maxProbesMarker, maxProbesMarker)
	}
}

// TestValuesSize: a file's random_bytes and benchflow serve --size read one
// size grammar: "0.1k" is 102.4 bytes, refused on both sides; T and TiB
// are known to both.
func TestValuesSize(t *testing.T) {
	for _, c := range []valueCase{
		{"6", ""},
		{"4KiB", ""},
		{"2.5MiB", ""},
		{"1.5KB", ""},
		{"0.5k", ""},
		{"0.1k", `"0.1k" is 102.400 bytes, not a whole number of bytes`},
		{"1.5", `"1.5" is 1.500 bytes, not a whole number of bytes`},
		{"4XB", `"4XB" has an unknown unit "XB"`},
		{"2TiB", `"2TiB" is larger than the largest size, 1099511627776 bytes (1 TiB)`},
		{"2T", `"2T" is larger than the largest size`},
		{"-1", `"-1" is not a size`},
	} {
		pipeline := fmt.Sprintf(`pipeline "values" {}
provider "local" "host" {}
service "web" {
  provider = "host"
  command  = ["true"]
  port "http" {}
  file "blob" { random_bytes = %q }
}
`, c.in)
		// --status 99 is refused after --size is read, before anything listens.
		po, fo := valueSides(t, pipeline, []string{"serve", "--addr", "127.0.0.1:0", "--status", "99", "--size", c.in})
		checkValueSides(t, c, po, fo, ": valid (", "status 99")
	}
}

// TestValuesDurationFlags: serve's and agent's duration flags read the
// same grammar as a pipeline's durations (a bare number is seconds, a
// negative duration is refused with the same message), not Go's alone.
func TestValuesDurationFlags(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--addr", "127.0.0.1:0", "--status", "99", "--delay", "5"}, "status 99"}, // accepted: 5 s
		{[]string{"serve", "--addr", "127.0.0.1:0", "--status", "99", "--stall-every", "0.5"}, "status 99"},
		{[]string{"serve", "--delay", "-1s"}, `"-1s" must not be negative`},
		{[]string{"serve", "--stall", "banana"}, `"banana" is not a duration (examples: 500ms, 30s, 2m)`},
		{[]string{"agent", "--idle", "-5s"}, `"-5s" must not be negative`},
	} {
		so, se, code := robustRun(t, dir, 60*time.Second, c.args...)
		if code == 0 || !strings.Contains(so+se, c.want) {
			t.Errorf("benchflow %v: exit %d, want an error containing %q\n%s%s", c.args, code, c.want, so, se)
		}
	}
}
