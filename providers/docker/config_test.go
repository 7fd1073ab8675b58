package docker

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/benchflow/benchflow/providers"
)

func TestRegisteredAndDecodable(t *testing.T) {
	typ, ok := providers.Lookup("docker")
	if !ok {
		t.Fatal("docker provider type not registered")
	}
	src := `
network  = "host"
bind     = "127.0.0.2"
pull     = "never"
cpus     = 1.5
cpuset   = "0-1"
memory   = "512MiB"
ulimits  = { nofile = 65535, nproc = "100:200" }
labels   = { team = "perf" }
files_dir = "/conf"
`
	f, diags := hclsyntax.ParseConfig([]byte(src), "p.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	cfg := typ.NewConfig()
	if diags := gohcl.DecodeBody(f.Body, nil, cfg); diags.HasErrors() {
		t.Fatalf("decoding: %v", diags)
	}
	p, err := typ.New(&providers.NewRequest{Name: "h", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	s := p.(*Provider).s
	if s.network != "host" || s.bind != "127.0.0.2" || s.pull != "never" || s.nanoCPUs != 1_500_000_000 ||
		s.cpuset != "0-1" || s.memory != 512<<20 || s.filesDir != "/conf" || s.labels["team"] != "perf" {
		t.Errorf("settings = %+v", s)
	}
	var got []string
	for _, u := range s.ulimits {
		got = append(got, u.String())
	}
	if d := cmp.Diff([]string{"nofile=65535:65535", "nproc=100:200"}, got); d != "" {
		t.Errorf("ulimits (-want +got):\n%s", d)
	}
	if lp := p.(providers.ListenPorter).ListenPort(providers.Port{Host: 30001, Container: 80}); lp != 30001 {
		t.Errorf("host mode ListenPort = %d, want the host port 30001", lp)
	}
	if dir := p.(providers.ServiceDirer).ServiceDir("nginx"); dir != "/conf" {
		t.Errorf("ServiceDir = %q", dir)
	}
}

func TestDefaults(t *testing.T) {
	p, err := New(&providers.NewRequest{Name: "nat"})
	if err != nil {
		t.Fatal(err)
	}
	s := p.(*Provider).s
	if s.network != NetworkBridge || s.bind != "127.0.0.1" || s.pull != PullMissing || s.filesDir != DefaultFilesDir || s.logTail != DefaultLogTail {
		t.Errorf("defaults = %+v", s)
	}
	lp := p.(providers.ListenPorter)
	if n := lp.ListenPort(providers.Port{Host: 30001, Container: 80}); n != 80 {
		t.Errorf("bridge ListenPort = %d, want the container port 80", n)
	}
	if n := lp.ListenPort(providers.Port{Host: 30001}); n != 30001 {
		t.Errorf("bridge ListenPort without container port = %d, want 30001", n)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Network: "my net"}, "network:"},
		{Config{Bind: "localhost"}, "bind:"},
		{Config{Pull: "sometimes"}, "pull:"},
		{Config{CPUs: -1}, "cpus:"},
		{Config{CPUSet: "0-x"}, "cpuset:"},
		{Config{CPUSet: "1,,2"}, "cpuset:"},
		{Config{Memory: "lots"}, "memory:"},
		{Config{Memory: "-5m"}, "memory:"},
		{Config{Ulimits: map[string]string{"nofile": "abc"}}, "ulimits:"},
		{Config{Ulimits: map[string]string{"bogus": "1"}}, "ulimits:"},
		{Config{Sysctls: map[string]string{"a b": "1"}}, "sysctls:"},
		{Config{Network: "host", Sysctls: map[string]string{"net.core.somaxconn": "1024"}}, "network = \"host\""},
		{Config{FilesDir: "relative"}, "files_dir:"},
		{Config{FilesDir: "/"}, "files_dir:"},
		{Config{LogTail: "ten"}, "log_tail:"},
		{Config{Labels: map[string]string{providers.LabelRun: "x"}}, "reserved"},
	} {
		cfg := tc.cfg
		_, err := New(&providers.NewRequest{Name: "x", Config: &cfg})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `docker provider "x"`) {
			t.Errorf("New(%+v) error = %v, want one naming %q and the provider", tc.cfg, err, tc.want)
		}
	}
	if _, err := New(&providers.NewRequest{Name: "x", Config: struct{}{}}); err == nil {
		t.Error("New with a foreign config type: no error")
	}
}

func TestContainerName(t *testing.T) {
	got := containerName("20261130T044500Z-3f9c", "t1/r2", "my svc")
	if got != "bf-20261130T044500Z-3f9c-t1_r2-my_svc" {
		t.Errorf("containerName = %q", got)
	}
	if !validName(got) {
		t.Errorf("%q is not a valid docker name", got)
	}
}

func TestReachableHost(t *testing.T) {
	for in, want := range map[string]string{"0.0.0.0": "127.0.0.1", "::": "::1", "127.0.0.5": "127.0.0.5", "::1": "::1"} {
		if got := reachableHost(in); got != want {
			t.Errorf("reachableHost(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestConfigValidate checks the seam the engine calls before New: every
// problem is a ConfigError naming the attribute, and a network named like
// a mode is a warning with the suggestion.
func TestConfigValidate(t *testing.T) {
	var _ providers.Validator = (*Config)(nil)
	attrs, other := providers.ConfigErrors((&Config{Pull: "alwyas"}).Validate())
	if len(attrs) != 1 || len(other) != 0 || attrs[0].Attr != "pull" || attrs[0].Warning || !strings.Contains(attrs[0].Msg, `Did you mean "always"?`) {
		t.Errorf("pull = alwyas: %+v %v", attrs, other)
	}
	attrs, _ = providers.ConfigErrors((&Config{Network: "brige"}).Validate())
	if len(attrs) != 1 || attrs[0].Attr != "network" || !attrs[0].Warning || !strings.Contains(attrs[0].Msg, `Did you mean "bridge"?`) {
		t.Errorf("network = brige: %+v", attrs)
	}
	if _, err := New(&providers.NewRequest{Name: "x", Config: &Config{Network: "brige"}}); err != nil {
		t.Errorf("a user network named brige is still allowed: %v", err)
	}
	for _, c := range []Config{{}, {Network: "host"}, {Network: "benchnet"}} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}
