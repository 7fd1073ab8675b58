package envinfo

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/benchflow/benchflow/engine/procfs"
)

// Explaining is what changes results and is invisible in a table: the
// container engine's storage and cgroup drivers, its userland proxy,
// security confinement, CPU vulnerability mitigations, virtualization
// and CPU frequency scaling. Every field is optional (empty when it
// cannot be read); none is part of the fingerprint.
type Explaining struct {
	// Docker, from `docker info` (CLI, else the API on DOCKER_HOST's unix
	// socket): storage driver ("overlay2", "fuse-overlayfs", …), cgroup
	// driver ("cgroupfs", "systemd") and version ("1", "2"), security
	// options ("seccomp", "apparmor", "rootless", "userns", …).
	DockerStorageDriver   string   `json:"docker_storage_driver,omitempty"`
	DockerCgroupDriver    string   `json:"docker_cgroup_driver,omitempty"`
	DockerCgroupVersion   string   `json:"docker_cgroup_version,omitempty"`
	DockerSecurityOptions []string `json:"docker_security_options,omitempty"`
	// DockerUserlandProxy is "true" or "false": from dockerd's command
	// line (--userland-proxy), else /etc/docker/daemon.json, else "true"
	// (Docker's default) when a local dockerd runs; empty when unknown.
	DockerUserlandProxy string `json:"docker_userland_proxy,omitempty"`

	// CgroupVersion of this machine: "2" (unified), "1" or "hybrid".
	CgroupVersion string `json:"cgroup_version,omitempty"`
	// Seccomp is benchflow's own seccomp mode (/proc/self/status:
	// "disabled", "strict", "filter"); AppArmor is "enabled" or "disabled"
	// (/sys/module/apparmor/parameters/enabled).
	Seccomp  string `json:"seccomp,omitempty"`
	AppArmor string `json:"apparmor,omitempty"`
	// Vulnerabilities maps each file of
	// /sys/devices/system/cpu/vulnerabilities to its line ("Mitigation:
	// PTI", "Not affected", "Vulnerable").
	Vulnerabilities map[string]string `json:"cpu_vulnerabilities,omitempty"`
	// Virtualization is the hypervisor (`systemd-detect-virt --vm`:
	// "kvm", "vmware", "none"), else "vm" when /proc/cpuinfo has the
	// hypervisor flag; ContainerRuntime is `systemd-detect-virt
	// --container` ("docker", "lxc", "none"). DMIVendor and DMIProduct
	// come from /sys/class/dmi/id.
	Virtualization   string `json:"virtualization,omitempty"`
	ContainerRuntime string `json:"container_runtime,omitempty"`
	DMIVendor        string `json:"dmi_vendor,omitempty"`
	DMIProduct       string `json:"dmi_product,omitempty"`
	// CPUBoost is "on" or "off" (cpufreq boost, or intel_pstate's
	// no_turbo); CPUFreqMaxMHz and CPUFreqCurMHz are cpu0's scaling limits
	// and current frequency, else the "cpu MHz" of /proc/cpuinfo in Cur.
	CPUBoost      string  `json:"cpu_boost,omitempty"`
	CPUFreqMaxMHz float64 `json:"cpu_freq_max_mhz,omitempty"`
	CPUFreqCurMHz float64 `json:"cpu_freq_cur_mhz,omitempty"`
}

// collectExplaining fills e.Explaining; the probes that run programs are
// bounded by ToolTimeout and run concurrently.
func collectExplaining(ctx context.Context, e *Explaining) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	wg.Go(func() {
		tctx, cancel := context.WithTimeout(ctx, ToolTimeout)
		defer cancel()
		info := dockerInfo(tctx)
		mu.Lock()
		defer mu.Unlock()
		e.DockerStorageDriver, e.DockerCgroupDriver, e.DockerCgroupVersion = info.Driver, info.CgroupDriver, info.CgroupVersion
		for _, o := range info.SecurityOptions {
			// "name=seccomp,profile=default" → "seccomp"
			name := o
			for _, kv := range strings.Split(o, ",") {
				if v, ok := strings.CutPrefix(kv, "name="); ok {
					name = v
				}
			}
			e.DockerSecurityOptions = append(e.DockerSecurityOptions, name)
		}
	})
	if p := lookTool("systemd-detect-virt"); p != "" {
		for _, flag := range []string{"--vm", "--container"} {
			wg.Go(func() {
				tctx, cancel := context.WithTimeout(ctx, ToolTimeout)
				defer cancel()
				// It exits 1 when it prints "none": keep the output.
				out, _ := ServiceVersion(tctx, []string{p, flag})
				v := versionLine(out)
				mu.Lock()
				defer mu.Unlock()
				if flag == "--vm" {
					e.Virtualization = v
				} else {
					e.ContainerRuntime = v
				}
			})
		}
	}
	e.DockerUserlandProxy = userlandProxy("/etc/docker/daemon.json")
	e.CgroupVersion = cgroupVersion(filepath.Join(sysRoot, "fs/cgroup"))
	if v, ok := procfs.StatusValue(procfs.Self, "Seccomp"); ok {
		e.Seccomp = seccompMode(v)
	}
	if b, err := os.ReadFile(filepath.Join(sysRoot, "module/apparmor/parameters/enabled")); err == nil {
		e.AppArmor = "disabled"
		if strings.HasPrefix(strings.TrimSpace(string(b)), "Y") {
			e.AppArmor = "enabled"
		}
	}
	e.Vulnerabilities = readDirLines(filepath.Join(sysRoot, "devices/system/cpu/vulnerabilities"))
	e.DMIVendor = readLine(filepath.Join(sysRoot, "class/dmi/id/sys_vendor"))
	e.DMIProduct = readLine(filepath.Join(sysRoot, "class/dmi/id/product_name"))
	cpufreq := filepath.Join(sysRoot, "devices/system/cpu")
	switch {
	case readLine(filepath.Join(cpufreq, "cpufreq/boost")) != "":
		e.CPUBoost = onOff(readLine(filepath.Join(cpufreq, "cpufreq/boost")) == "1")
	case readLine(filepath.Join(cpufreq, "intel_pstate/no_turbo")) != "":
		e.CPUBoost = onOff(readLine(filepath.Join(cpufreq, "intel_pstate/no_turbo")) == "0")
	}
	e.CPUFreqMaxMHz = khzToMHz(readLine(filepath.Join(cpufreq, "cpu0/cpufreq/scaling_max_freq")))
	e.CPUFreqCurMHz = khzToMHz(readLine(filepath.Join(cpufreq, "cpu0/cpufreq/scaling_cur_freq")))
	cpuinfo, _ := os.ReadFile(filepath.Join(procfs.Root, "cpuinfo"))
	if e.CPUFreqCurMHz == 0 {
		e.CPUFreqCurMHz = cpuinfoMHz(cpuinfo)
	}
	wg.Wait()
	if (e.Virtualization == "" || e.Virtualization == "none") && bytes.Contains(cpuinfo, []byte(" hypervisor")) {
		e.Virtualization = "vm"
	}
}

type dockerInfoResult struct {
	Driver          string
	CgroupDriver    string
	CgroupVersion   string
	SecurityOptions []string
}

// dockerInfo asks the engine for `docker info` (CLI, else the API).
func dockerInfo(ctx context.Context) dockerInfoResult {
	var info dockerInfoResult
	if p, err := execLookPath("docker"); err == nil {
		out, err := ServiceVersion(ctx, []string{p, "info", "--format", "{{json .}}"})
		if err == nil && json.Unmarshal([]byte(out), &info) == nil && info.Driver != "" {
			return info
		}
	}
	_ = dockerAPI(ctx, "/info", &info)
	return info
}

// userlandProxy says whether Docker's userland proxy is on: dockerd's
// --userland-proxy flag, else daemon.json's "userland-proxy", else Docker's
// default (true) when a dockerd process runs here; "" when none does.
func userlandProxy(daemonJSON string) string {
	pids, err := procfs.PIDs("")
	if err != nil {
		return ""
	}
	found := false
	for _, pid := range pids {
		if comm, _ := procfs.Comm(pid); comm != "dockerd" {
			continue
		}
		found = true
		args, _ := procfs.Cmdline(pid)
		for i, a := range args {
			if v, ok := strings.CutPrefix(a, "--userland-proxy="); ok {
				return strconv.FormatBool(v != "false")
			}
			if a == "--userland-proxy" {
				if i+1 < len(args) && (args[i+1] == "false" || args[i+1] == "true") {
					return args[i+1]
				}
				return "true"
			}
		}
		break
	}
	if !found {
		return ""
	}
	if b, err := os.ReadFile(daemonJSON); err == nil {
		var cfg map[string]any
		if json.Unmarshal(b, &cfg) == nil {
			if v, ok := cfg["userland-proxy"].(bool); ok {
				return strconv.FormatBool(v)
			}
		}
	}
	return "true"
}

// cgroupVersion: "2" when the root is the unified hierarchy, "hybrid"
// when v1 controllers sit next to a unified mount, else "1".
func cgroupVersion(root string) string {
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		return "2"
	}
	if _, err := os.Stat(root); err != nil {
		return ""
	}
	if _, err := os.Stat(filepath.Join(root, "unified", "cgroup.controllers")); err == nil {
		return "hybrid"
	}
	return "1"
}

// seccompMode names the mode of /proc/self/status's Seccomp line ("" for
// an unknown one).
func seccompMode(v string) string {
	switch v {
	case "0":
		return "disabled"
	case "1":
		return "strict"
	case "2":
		return "filter"
	}
	return ""
}

// readDirLines maps each regular file of dir to its first line.
func readDirLines(dir string) map[string]string {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 {
		return nil
	}
	out := map[string]string{}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, n := range names {
		if v := readLine(filepath.Join(dir, n)); v != "" {
			out[n] = v
		}
	}
	return out
}

func readLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return versionLine(string(b))
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

func khzToMHz(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 {
		return 0
	}
	return v / 1000
}

// cpuinfoMHz is the "cpu MHz" of the first processor in /proc/cpuinfo.
func cpuinfoMHz(b []byte) float64 {
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "cpu MHz" {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}
