package k8s_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/benchflow/benchflow/engine/results/resultstest"
	"github.com/benchflow/benchflow/providers"
)

// TestAccK8sAgents runs pipelines/k8s-agents.hcl with bin/benchflow: nginx
// in the cluster, loaded by two agent pods through its Service. The merged
// requests equal the sum of the agents'; the merged p50/p99/p99.9 are the
// percentiles DuckDB recomputes from the union of the agents' buckets in
// latency.parquet; the agents ran in pods (their hosts are pod names, not
// this machine); nothing of the run is left in the cluster. It needs
// BENCHFLOW_ACC=1, a kubeconfig ($KUBECONFIG; make testacc-k8s sets it
// for the local cluster) and the images nginx:alpine and
// benchflow/agent:local on the node (make images, make cluster-up).
func TestAccK8sAgents(t *testing.T) {
	if os.Getenv("BENCHFLOW_ACC") != "1" {
		t.Skip("acceptance test: set BENCHFLOW_ACC=1 (make testacc-k8s) to run it against a real cluster")
	}
	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		home, _ := os.UserHomeDir()
		kubeconfig = filepath.Join(home, ".kube", "config")
	}
	if _, err := os.Stat(filepath.SplitList(kubeconfig)[0]); err != nil {
		t.Skipf("no kubeconfig (%v): the acceptance test needs a cluster", err)
	}
	bin := os.Getenv("BENCHFLOW_BIN")
	if bin == "" {
		bin = "../../bin/benchflow"
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no benchflow binary (%v): run make build or set BENCHFLOW_BIN", err)
	}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		t.Fatalf("loading the kubeconfig: %v", err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		t.Fatalf("the cluster of %s does not answer: %v", kubeconfig, err)
	}

	// The run (with the agents' logs) is kept when the test fails.
	out, err := os.MkdirTemp("", "benchflow-acc-agents-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("results kept in %s", out)
			return
		}
		os.RemoveAll(out)
	})
	args := []string{"apply", "../../pipelines/k8s-agents.hcl", "--out", out, "--var", "duration=3s"}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	b, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	t.Logf("benchflow %v:\n%s", args, b)
	if err != nil {
		t.Fatalf("benchflow apply: %v", err)
	}
	runDir, err := filepath.EvalSymlinks(filepath.Join(out, "latest"))
	if err != nil {
		t.Fatalf("no results/latest: %v", err)
	}
	m := resultstest.CheckAgentMerge(t, runDir, "wrk", 2)
	host, _ := os.Hostname()
	for _, a := range m.Agents {
		if a.Host == "" || a.Host == host || a.Requests == 0 {
			t.Errorf("agent %d ran on %q (this machine is %q) with %d requests: want a pod and requests", a.Agent, a.Host, host, a.Requests)
		}
		t.Logf("agent %d: pod %s, %d requests, clock offset %.6fs ± %.6fs, late %.6fs", a.Agent, a.Host, a.Requests, a.ClockOffsetS, a.BoundS, a.LateS)
	}
	for _, n := range []string{"agent-wrk-1.log", "agent-wrk-2.log"} {
		if logs, _ := filepath.Glob(filepath.Join(runDir, "logs", "*", n)); len(logs) != 1 {
			t.Errorf("the agent log %s was not kept", n)
		}
	}

	// Nothing of the run may be left (namespaces may still be terminating).
	sel := metav1.ListOptions{LabelSelector: providers.LabelManaged + "=true," + providers.LabelRun + "=" + filepath.Base(runDir)}
	if pods, err := cs.CoreV1().Pods("").List(ctx, sel); err != nil {
		t.Errorf("listing pods: %v", err)
	} else {
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				t.Errorf("pod %s/%s left", p.Namespace, p.Name)
			}
		}
	}
	if deps, err := cs.AppsV1().Deployments("").List(ctx, sel); err != nil || len(deps.Items) > 0 {
		t.Errorf("deployments left: %v %v", deps, err)
	}
	if nss, err := cs.CoreV1().Namespaces().List(ctx, sel); err == nil {
		for _, ns := range nss.Items {
			if ns.DeletionTimestamp == nil {
				t.Errorf("namespace %s left active", ns.Name)
			}
		}
	}
}
