package results

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Environment flattens a run's recorded environment into "field" → value:
// the manifest's environment (nested maps as "tools.nginx",
// "sysctls.net.core.somaxconn", "cpu_vulnerabilities.meltdown"; lists
// joined with ", ") and the versions the providers reported for the
// services ("services.<provider type>.<name>", e.g.
// "services.nomad.nomad_client", from the trials: every value any trial
// reported, sorted, joined with ", ").
func Environment(m *Manifest) map[string]string {
	out := map[string]string{}
	if m == nil {
		return out
	}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, y := range x {
				walk(join(prefix, k), y)
			}
		case []any:
			var parts []string
			for _, y := range x {
				parts = append(parts, scalar(y))
			}
			out[prefix] = strings.Join(parts, ", ")
		case nil:
		default:
			out[prefix] = scalar(x)
		}
	}
	walk("", m.Environment)
	// A version seen in some trials only (APISIX's in gateway trials)
	// is the stack's all the same; different values in different
	// trials (clients upgraded mid-run) are all listed.
	seen := map[string][]string{}
	for _, t := range m.Trials {
		for _, s := range t.Services {
			// A machine of its own (an ssh host: ssh_host) is named by
			// its provider block, so two runs on other addresses still
			// compare host by host: "hosts.server.host_kernel".
			perHost := s.Versions["ssh_host"] != ""
			for k, v := range s.Versions {
				f := "services." + s.Type + "." + k
				if perHost {
					f = "hosts." + s.Provider + "." + k
				}
				for _, part := range strings.Split(v, ", ") {
					if part = strings.TrimSpace(part); part != "" && !slices.Contains(seen[f], part) {
						seen[f] = append(seen[f], part)
					}
				}
			}
		}
	}
	for f, vs := range seen {
		sort.Strings(vs)
		out[f] = strings.Join(vs, ", ")
	}
	return out
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return fmt.Sprintf("%d", int64(x))
		}
		return fmt.Sprint(x)
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// noise are the recorded fields that differ between any two runs and
// explain nothing: when and where exactly it ran, and derived values.
var noise = map[string]bool{
	"hostname":         true,
	"collected_at":     true,
	"fingerprint":      true,
	"cpu_freq_cur_mhz": true,
	"git_commit_time":  true,
	// The load average is compared apart, with the quiet checks
	// (MachineLoad): it always differs, and matters only when busy.
	"load_average": true,
}

// hostNoise are the fields of a host (hosts.<provider>.<field>) that
// differ between any two runs on other machines and explain nothing:
// where it is and what it is called.
var hostNoise = map[string]bool{"ssh_host": true, "host_name": true}

// isNoise reports a field that differs between any two runs.
func isNoise(field string) bool {
	if noise[field] {
		return true
	}
	if rest, ok := strings.CutPrefix(field, "hosts."); ok {
		if _, f, ok := strings.Cut(rest, "."); ok {
			return hostNoise[f]
		}
	}
	return false
}

// Difference is one recorded environment field that is not the same in
// two runs ("" when absent from one).
type Difference struct {
	Field string `json:"field"`
	A     string `json:"bundle"`
	B     string `json:"here"`
	// Docker is true for the container engine's fields (storage driver,
	// userland proxy, cgroup driver, security options, its version): they
	// explain cells deployed by the docker provider only.
	Docker bool `json:"docker,omitempty"`
	// HiddenA and HiddenB say why a field is absent from a run that ran in
	// reproduce's sandbox without what would show it ("hidden by the
	// sandbox (no docker grant)"); empty otherwise.
	HiddenA string `json:"bundle_hidden,omitempty"`
	HiddenB string `json:"here_hidden,omitempty"`
}

func (d Difference) String() string {
	return fmt.Sprintf("%s: %s → %s", d.Field, absentOr(d.A, d.HiddenA), absentOr(d.B, d.HiddenB))
}

// hiddenBySandbox says why field is absent from a run that recorded the
// sandbox note (envinfo's Sandbox: "bubblewrap; grants: …; network: …"),
// or "" when the sandbox does not explain it: the Docker daemon's fields
// without the docker grant, the host network's sysctls (net.*) in a
// network of its own.
func hiddenBySandbox(field, note string) string {
	if note == "" {
		return ""
	}
	grants, network := "", ""
	for _, part := range strings.Split(note, "; ") {
		if v, ok := strings.CutPrefix(part, "grants: "); ok {
			grants = v
		}
		if v, ok := strings.CutPrefix(part, "network: "); ok {
			network = v
		}
	}
	switch {
	case isDockerField(field) && !slices.Contains(strings.Split(grants, ", "), "docker"):
		return "hidden by the sandbox: no docker grant"
	case strings.HasPrefix(field, "sysctls.net.") && network == "own":
		return "hidden by the sandbox: a network of its own"
	}
	return ""
}

// Differences lists every recorded environment field that differs
// between a and b (noise left out), sorted by field.
func Differences(a, b *Manifest) []Difference {
	ea, eb := Environment(a), Environment(b)
	keys := map[string]bool{}
	for k := range ea {
		keys[k] = true
	}
	for k := range eb {
		keys[k] = true
	}
	var out []Difference
	for k := range keys {
		if isNoise(k) || ea[k] == eb[k] {
			continue
		}
		// Memory moves by a few MiB between boots: compare GiB.
		if k == "memory_bytes" && gib(ea[k]) == gib(eb[k]) {
			continue
		}
		d := Difference{Field: k, A: ea[k], B: eb[k], Docker: isDockerField(k)}
		if d.A == "" {
			d.HiddenA = hiddenBySandbox(k, ea["sandbox"])
		}
		if d.B == "" {
			d.HiddenB = hiddenBySandbox(k, eb["sandbox"])
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

func isDockerField(k string) bool {
	return strings.HasPrefix(k, "docker_") || k == "tools.docker" || strings.HasPrefix(k, "services.docker.")
}

func gib(s string) string {
	var n float64
	if _, err := fmt.Sscan(s, &n); err != nil {
		return s
	}
	return fmt.Sprintf("%.0f GiB", n/(1<<30))
}

// EnvironmentRows are the environment fields a reader looks at first, as
// label and value, in a fixed order (fields not recorded are left out),
// then the tool and service versions.
func EnvironmentRows(m *Manifest) [][2]string {
	env := Environment(m)
	var rows [][2]string
	add := func(label, v string) {
		if v != "" {
			rows = append(rows, [2]string{label, v})
		}
	}
	add("CPU", env["cpu_model"])
	if env["cpu_cores"] != "" || env["cpu_threads"] != "" {
		add("cores / threads", fmt.Sprintf("%s / %s (benchflow allowed %s)", env["cpu_cores"], env["cpu_threads"], cmp.Or(env["allowed_cpus"], "?")))
	}
	if env["memory_bytes"] != "" {
		add("memory", gib(env["memory_bytes"]))
	}
	add("kernel", strings.TrimSpace(env["kernel_name"]+" "+env["kernel_release"]))
	add("distribution", env["distribution"])
	add("virtualization", env["virtualization"])
	add("CPU governor / boost", strings.Trim(env["cpu_governor"]+" / "+env["cpu_boost"], " /"))
	add("mitigations", mitigations(env))
	add("cgroup version", env["cgroup_version"])
	add("docker storage driver", env["docker_storage_driver"])
	add("docker userland proxy", env["docker_userland_proxy"])
	add("benchflow", env["benchflow_version"])
	add("Go", env["go_version"])
	var tools []string
	for k := range env {
		if strings.HasPrefix(k, "tools.") || strings.HasPrefix(k, "services.") || strings.HasPrefix(k, "hosts.") {
			tools = append(tools, k)
		}
	}
	sort.Strings(tools)
	for _, k := range tools {
		add(strings.TrimPrefix(k, "tools."), env[k])
	}
	return rows
}

// mitigations summarises cpu_vulnerabilities: how many are mitigated,
// vulnerable, not affected.
func mitigations(env map[string]string) string {
	counts := map[string]int{}
	n := 0
	for k, v := range env {
		if !strings.HasPrefix(k, "cpu_vulnerabilities.") || v == "" {
			continue
		}
		n++
		switch {
		case strings.HasPrefix(v, "Not affected"):
			counts["not affected"]++
		case strings.HasPrefix(v, "Vulnerable"):
			counts["vulnerable"]++
		default:
			counts["mitigated"]++
		}
	}
	if n == 0 {
		return ""
	}
	var parts []string
	for _, k := range []string{"mitigated", "vulnerable", "not affected"} {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
		}
	}
	return strings.Join(parts, ", ")
}

// Ranks of the differences a verdict lists, in the order a reader looks
// for the cause of a moved figure: the variables set otherwise, the
// machine's load, the CPU, the kernel, the virtualization, the versions
// (services, platform, tools, benchflow), then the rest.
const (
	RankVariable = iota
	RankLoad
	RankCPU
	RankKernel
	RankVirtualization
	RankVersion
	RankOther
)

// rankOf is the rank of an environment field and its place within it.
func rankOf(field string) (rank, place int) {
	order := func(list ...string) int {
		for i, f := range list {
			if f == field {
				return i
			}
		}
		return len(list)
	}
	if rest, ok := strings.CutPrefix(field, "hosts."); ok {
		// Another machine's fields rank as this machine's alike.
		_, f, _ := strings.Cut(rest, ".")
		switch {
		case f == "host_cpu" || f == "host_cores":
			return RankCPU, 10
		case f == "host_kernel" || f == "host_os":
			return RankKernel, 10
		case strings.HasPrefix(f, "host_sysctl."):
			return RankOther, 2
		}
		return RankOther, 0
	}
	switch {
	case strings.HasPrefix(field, "cpu_vulnerabilities."):
		return RankOther, 1
	case field == "cpu_model", field == "cpu_cores", field == "cpu_threads", field == "cpu_sockets", field == "allowed_cpus", field == "arch":
		return RankCPU, order("cpu_model", "cpu_cores", "cpu_threads", "allowed_cpus", "cpu_sockets", "arch")
	case strings.HasPrefix(field, "kernel_"):
		return RankKernel, order("kernel_release", "kernel_name", "kernel_version")
	case field == "virtualization", field == "in_container", field == "container_runtime", field == "sandbox":
		return RankVirtualization, order("virtualization", "in_container", "container_runtime", "sandbox")
	case strings.HasPrefix(field, "services."):
		return RankVersion, 0
	case strings.HasPrefix(field, "tools."):
		return RankVersion, 1
	case strings.HasSuffix(field, "_version") && !strings.HasSuffix(field, "cgroup_version"):
		return RankVersion, 2 + order("benchflow_version", "go_version")
	case strings.HasPrefix(field, "sysctls."):
		return RankOther, 2
	}
	return RankOther, 0
}

// withinRounding reports whether two recorded values are numbers that
// differ by less than 1% of the larger ("fs.file-max" 2466116 → 2466089:
// the kernel sizes it from the memory, which moves by a few pages between
// boots).
func withinRounding(a, b string) bool {
	x, errA := strconv.ParseFloat(strings.TrimSpace(a), 64)
	y, errB := strconv.ParseFloat(strings.TrimSpace(b), 64)
	if errA != nil || errB != nil || x == y {
		return false
	}
	return math.Abs(x-y) < 0.01*math.Max(math.Abs(x), math.Abs(y))
}

// Change is one line of what differs between the bundle and here, as a
// verdict lists them (Changes): Name is what a moved claim or cell names
// ("duration", "machine load", "cpu_model", "mitigations"), Bundle and
// Here the values.
type Change struct {
	Rank   int    `json:"rank"`
	Name   string `json:"name"`
	Bundle string `json:"bundle"`
	Here   string `json:"here"`
	// Docker is true for the container engine's fields: they explain
	// what a docker provider deployed only.
	Docker bool `json:"docker,omitempty"`
	place  int
}

// Changes ranks the environment differences (Rank*): the mitigations
// (cpu_vulnerabilities.*) folded into one line, and the sysctls that
// differ by less than 1% (a rounding, not a setting) left out and
// counted in rounded.
func Changes(diffs []Difference) (out []Change, rounded int) {
	var mit []Difference
	for _, d := range diffs {
		switch {
		case strings.HasPrefix(d.Field, "cpu_vulnerabilities."):
			mit = append(mit, d)
			continue
		case (strings.HasPrefix(d.Field, "sysctls.") || strings.HasPrefix(d.Field, "hosts.") && strings.Contains(d.Field, ".host_sysctl.")) && withinRounding(d.A, d.B):
			rounded++
			continue
		}
		r, p := rankOf(d.Field)
		out = append(out, Change{Rank: r, Name: d.Field, Bundle: absentOr(d.A, d.HiddenA), Here: absentOr(d.B, d.HiddenB), Docker: d.Docker, place: p})
	}
	if len(mit) > 0 {
		a, b := map[string]string{}, map[string]string{}
		for _, d := range mit {
			a[d.Field], b[d.Field] = d.A, d.B
		}
		r, p := rankOf(mit[0].Field)
		name := fmt.Sprintf("mitigations (%d differ)", len(mit))
		if len(mit) == 1 {
			name = "mitigations (1 differs)"
		}
		out = append(out, Change{Rank: r, Name: name, Bundle: absent(mitigations(a)), Here: absent(mitigations(b)), place: p})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Rank != out[j].Rank {
			return out[i].Rank < out[j].Rank
		}
		if out[i].place != out[j].place {
			return out[i].place < out[j].place
		}
		return out[i].Name < out[j].Name
	})
	return out, rounded
}

func absent(s string) string { return absentOr(s, "") }

// absentOr is s, or why it is missing: hidden when a sandbox hid it, else
// "(absent)".
func absentOr(s, hidden string) string {
	switch {
	case s != "":
		return s
	case hidden != "":
		return "(" + hidden + ")"
	}
	return "(absent)"
}
