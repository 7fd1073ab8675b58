package k8s

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/benchflow/benchflow/providers"
)

var _ providers.VersionReporter = (*Deployment)(nil)

// versionTimeout bounds PlatformVersions as the interface promises, also
// when the caller's context has no deadline.
const versionTimeout = 5 * time.Second

// PlatformVersions reports "k8s_server", the API server's GitVersion
// (discovery's /version, e.g. "v1.31.2"), and "kubelet", the
// status.nodeInfo.kubeletVersion of each node that runs a pod of the
// service (several, sorted and joined with ", ", when they differ). What
// the cluster does not answer within 5 s is left out: a version never
// fails a trial.
func (d *Deployment) PlatformVersions(ctx context.Context) map[string]string {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	var (
		mu  sync.Mutex
		out = map[string]string{}
		wg  sync.WaitGroup
	)
	set := func(k, v string) {
		if v = strings.TrimSpace(v); v != "" {
			mu.Lock()
			out[k] = v
			mu.Unlock()
		}
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		set("k8s_server", d.serverVersion(ctx))
	}()
	go func() {
		defer wg.Done()
		set("kubelet", d.kubeletVersions(ctx))
	}()
	wg.Wait()
	if len(out) == 0 {
		return nil
	}
	return out
}

// serverVersion asks the API server for /version.
func (d *Deployment) serverVersion(ctx context.Context) string {
	v, err := d.cs.ServerVersion(ctx)
	if err != nil || v == nil {
		return ""
	}
	return v.GitVersion
}

// kubeletVersions lists the kubelet versions of the nodes running the
// service's pods.
func (d *Deployment) kubeletVersions(ctx context.Context) string {
	if d.objs == nil {
		return ""
	}
	pods, err := d.pods(ctx)
	if err != nil {
		return ""
	}
	nodes := map[string]bool{}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			nodes[p.Spec.NodeName] = true
		}
	}
	seen := map[string]bool{}
	var versions []string
	for name := range nodes {
		n, err := d.cs.Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		if v := n.Status.NodeInfo.KubeletVersion; v != "" && !seen[v] {
			seen[v] = true
			versions = append(versions, v)
		}
	}
	sort.Strings(versions)
	return strings.Join(versions, ", ")
}
