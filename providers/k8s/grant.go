package k8s

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/benchflow/benchflow/engine/sandbox/grant"
)

// Grant is what a reproduction with k8s services needs (reproduce
// --allow k8s): the kubeconfig readable ($KUBECONFIG, else
// ~/.kube/config, set in the sandbox since its home folders are hidden),
// the host's network to reach the cluster, the machine's pids (a local
// cluster's containers) and the services' files under --out.
var Grant = &grant.Spec{
	Name:            "k8s",
	Meaning:         "your kubeconfig and the host network",
	HostNetwork:     true,
	SharesPIDs:      true,
	ServicesOutside: true,
	Env:             func(k string) bool { return k == "KUBECONFIG" },
	SetEnv: func(getenv func(string) string) []string {
		if getenv("KUBECONFIG") != "" {
			return nil
		}
		if h, err := os.UserHomeDir(); err == nil {
			return []string{"KUBECONFIG=" + filepath.Join(h, ".kube", "config")}
		}
		return nil
	},
	Binds: func(getenv func(string) string) []grant.Bind {
		var bs []grant.Bind
		for _, p := range kubeconfigs(getenv) {
			bs = append(bs, grant.Bind{Path: p, AtGiven: true})
		}
		return bs
	},
	Describe: func(getenv func(string) string) string {
		return "k8s (granted): the kubeconfig " + strings.Join(kubeconfigs(getenv), ", ") + " is readable, and the cluster it names reachable with its credentials"
	},
}

// kubeconfigs are the files the grant keeps readable: $KUBECONFIG's (a
// list, as kubectl reads it), else ~/.kube/config.
func kubeconfigs(getenv func(string) string) []string {
	if kc := getenv("KUBECONFIG"); kc != "" {
		return filepath.SplitList(kc)
	}
	home := getenv("HOME")
	if home == "" {
		home = os.Getenv("HOME")
	}
	if home == "" {
		return nil
	}
	return []string{filepath.Join(home, ".kube", "config")}
}
