package results

import (
	"strings"
	"testing"
)

// TestDifferences: every recorded field that differs is listed (nested
// maps flattened, the service versions of the trials included), the noise
// fields and memory within the same GiB are not, and Docker's fields are
// marked as such.
func TestDifferences(t *testing.T) {
	a := &Manifest{Environment: map[string]any{
		"hostname": "a", "collected_at": "t1", "fingerprint": "f1", "cpu_freq_cur_mhz": 2100.0,
		"cpu_model": "AMD EPYC", "cpu_cores": 2.0, "memory_bytes": float64(8 << 30),
		"docker_storage_driver": "overlay2", "tools": map[string]any{"nginx": "1.22", "wrk": "4.2"},
		"cpu_vulnerabilities": map[string]any{"meltdown": "Not affected"},
	}, Trials: []TrialEntry{{Services: []ServiceEntry{{Type: "k8s", Versions: map[string]string{"server": "1.31"}}}}}}
	b := &Manifest{Environment: map[string]any{
		"hostname": "b", "collected_at": "t2", "fingerprint": "f2", "cpu_freq_cur_mhz": 3000.0,
		"cpu_model": "Intel Xeon", "cpu_cores": 2.0, "memory_bytes": float64(8<<30 - 5<<20),
		"docker_storage_driver": "fuse-overlayfs", "tools": map[string]any{"nginx": "1.26", "wrk": "4.2"},
		"cpu_vulnerabilities": map[string]any{"meltdown": "Mitigation: PTI"},
	}, Trials: []TrialEntry{{Services: []ServiceEntry{{Type: "k8s", Versions: map[string]string{"server": "1.32"}}}}}}
	var got []string
	docker := map[string]bool{}
	for _, d := range Differences(a, b) {
		got = append(got, d.String())
		docker[d.Field] = d.Docker
	}
	want := []string{
		"cpu_model: AMD EPYC → Intel Xeon",
		"cpu_vulnerabilities.meltdown: Not affected → Mitigation: PTI",
		"docker_storage_driver: overlay2 → fuse-overlayfs",
		"services.k8s.server: 1.31 → 1.32",
		"tools.nginx: 1.22 → 1.26",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("differences:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !docker["docker_storage_driver"] || docker["cpu_model"] {
		t.Errorf("docker marks: %v", docker)
	}
}

// stackManifest is a gateway run's manifest: direct trials record Nomad's
// and Consul's versions, gateway trials APISIX's and etcd's too.
func stackManifest(client string) *Manifest {
	base := map[string]string{"nomad_server": "1.6.5", "nomad_client": client, "consul": "1.16.4"}
	gw := map[string]string{"nomad_server": "1.6.5", "nomad_client": client, "consul": "1.16.4",
		"apisix": "3.9.1", "etcd": "3.4.23", "etcd_cluster": "3.4.0"}
	return &Manifest{Environment: map[string]any{"cpu_model": "AMD EPYC"}, Trials: []TrialEntry{
		{TrialID: "t1", Services: []ServiceEntry{{Name: "web", Type: "nomad", Versions: base}}},
		{TrialID: "t2", Services: []ServiceEntry{{Name: "web", Type: "nomad", Versions: gw}}},
	}}
}

// TestStackVersions: the stack's versions are environment fields whether
// every trial or only some recorded them, a differing one is a named
// difference, and values that differ between trials are all kept.
func TestStackVersions(t *testing.T) {
	a, b := stackManifest("1.6.5"), stackManifest("1.7.0")
	env := Environment(a)
	for f, want := range map[string]string{
		"services.nomad.nomad_server": "1.6.5", "services.nomad.nomad_client": "1.6.5", "services.nomad.consul": "1.16.4",
		"services.nomad.apisix": "3.9.1", "services.nomad.etcd": "3.4.23", "services.nomad.etcd_cluster": "3.4.0",
	} {
		if env[f] != want {
			t.Errorf("%s = %q, want %q", f, env[f], want)
		}
	}
	var got []string
	for _, d := range Differences(a, b) {
		got = append(got, d.String())
		if d.Docker {
			t.Errorf("%s marked as Docker's", d.Field)
		}
	}
	if want := "services.nomad.nomad_client: 1.6.5 → 1.7.0"; strings.Join(got, "|") != want {
		t.Errorf("differences %q, want %q", got, want)
	}
	// One side without APISIX's version (it did not answer): absent.
	delete(b.Trials[1].Services[0].Versions, "apisix")
	got = nil
	for _, d := range Differences(a, b) {
		got = append(got, d.String())
	}
	if want := "services.nomad.apisix: 3.9.1 → (absent)|services.nomad.nomad_client: 1.6.5 → 1.7.0"; strings.Join(got, "|") != want {
		t.Errorf("differences %q, want %q", got, want)
	}
	// A client upgraded between trials, and a trial on two clients.
	a.Trials[1].Services[0].Versions["nomad_client"] = "1.7.0"
	a.Trials = append(a.Trials, TrialEntry{TrialID: "t3", Services: []ServiceEntry{{Name: "web", Type: "nomad",
		Versions: map[string]string{"nomad_client": "1.6.5, 1.8.1"}}}})
	if got := Environment(a)["services.nomad.nomad_client"]; got != "1.6.5, 1.7.0, 1.8.1" {
		t.Errorf("nomad_client over trials = %q", got)
	}
}

// TestDifferencesHiddenBySandbox: a field absent from a run that ran in
// reproduce's sandbox says why when the sandbox explains it (Docker's
// fields without the docker grant, net.* sysctls in a network of its own),
// and stays "(absent)" otherwise or when the grant was given; the
// sandbox itself is a difference ranked with the virtualization.
func TestDifferencesHiddenBySandbox(t *testing.T) {
	bundle := &Manifest{Environment: map[string]any{
		"docker_storage_driver": "overlay2", "tools": map[string]any{"docker": "20.10", "nginx": "1.22"},
		"sysctls": map[string]any{"net.core.netdev_max_backlog": "1000", "fs.file-max": "100"},
	}}
	for _, c := range []struct {
		note string
		want []string
	}{
		{"bubblewrap; grants: none; network: own", []string{
			"docker_storage_driver: overlay2 → (hidden by the sandbox: no docker grant)",
			"sandbox: (absent) → bubblewrap; grants: none; network: own",
			"sysctls.fs.file-max: 100 → (absent)",
			"sysctls.net.core.netdev_max_backlog: 1000 → (hidden by the sandbox: a network of its own)",
			"tools.docker: 20.10 → (hidden by the sandbox: no docker grant)",
			"tools.nginx: 1.22 → (absent)",
		}},
		{"bubblewrap; grants: docker, tune; network: host", []string{
			"docker_storage_driver: overlay2 → (absent)",
			"sandbox: (absent) → bubblewrap; grants: docker, tune; network: host",
			"sysctls.fs.file-max: 100 → (absent)",
			"sysctls.net.core.netdev_max_backlog: 1000 → (absent)",
			"tools.docker: 20.10 → (absent)",
			"tools.nginx: 1.22 → (absent)",
		}},
		{"", []string{
			"docker_storage_driver: overlay2 → (absent)",
			"sysctls.fs.file-max: 100 → (absent)",
			"sysctls.net.core.netdev_max_backlog: 1000 → (absent)",
			"tools.docker: 20.10 → (absent)",
			"tools.nginx: 1.22 → (absent)",
		}},
	} {
		here := &Manifest{Environment: map[string]any{}}
		if c.note != "" {
			here.Environment["sandbox"] = c.note
		}
		diffs := Differences(bundle, here)
		var got []string
		for _, d := range diffs {
			got = append(got, d.String())
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("sandbox %q:\n%s\nwant:\n%s", c.note, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
		changes, _ := Changes(diffs)
		for _, ch := range changes {
			if ch.Name == "tools.docker" && !strings.Contains(c.note, "docker") && c.note != "" && ch.Here != "(hidden by the sandbox: no docker grant)" {
				t.Errorf("sandbox %q: change tools.docker here = %q", c.note, ch.Here)
			}
			if ch.Name == "sandbox" && ch.Rank != RankVirtualization {
				t.Errorf("sandbox ranked %d, want %d", ch.Rank, RankVirtualization)
			}
		}
	}
}

// TestDifferencesPerHost: the environment of each ssh host is compared
// host by host, named by its provider block (the addresses differ by
// design: a reader's own machines), its address and name left out.
func TestDifferencesPerHost(t *testing.T) {
	host := func(addr, kernel, nic, mtu string) ServiceEntry {
		return ServiceEntry{Name: "nginx", Provider: "server", Type: "ssh", Versions: map[string]string{
			"ssh_host": "bench@" + addr + ":22", "host_name": "h-" + addr, "host_kernel": kernel,
			"host_nic_driver": nic, "host_nic_mtu": mtu, "host_sysctl.net.core.somaxconn": "4096"}}
	}
	a := &Manifest{Trials: []TrialEntry{{Services: []ServiceEntry{host("10.0.0.2", "6.1.0-27-amd64", "virtio_net", "1500")}}}}
	b := &Manifest{Trials: []TrialEntry{{Services: []ServiceEntry{host("192.168.1.7", "6.1.0-28-amd64", "virtio_net", "9000")}}}}
	var got []string
	for _, d := range Differences(a, b) {
		got = append(got, d.String())
	}
	want := []string{
		"hosts.server.host_kernel: 6.1.0-27-amd64 → 6.1.0-28-amd64",
		"hosts.server.host_nic_mtu: 1500 → 9000",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("differences:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r, _ := rankOf("hosts.server.host_kernel"); r != RankKernel {
		t.Errorf("a host's kernel ranks %d, want RankKernel", r)
	}
}
