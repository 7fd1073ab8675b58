package k8s_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/providers"
)

// TestAccK8sIngress runs pipelines/k8s-ingress.hcl with bin/benchflow on
// the cluster of the default kubeconfig, then checks the results and that
// no labelled object of the run is left. It needs BENCHFLOW_ACC=1, a
// kubeconfig whose cluster runs an ingress controller (class
// $BENCHFLOW_K8S_INGRESS_CLASS, default "nginx") reachable at
// $BENCHFLOW_K8S_INGRESS_ADDRESS (default 127.0.0.1:80), and the
// nginx:alpine image on the node.
func TestAccK8sIngress(t *testing.T) {
	if os.Getenv("BENCHFLOW_ACC") != "1" {
		t.Skip("acceptance test: set BENCHFLOW_ACC=1 (make testacc) to run it against a real cluster")
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
	sv, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("the cluster of %s does not answer: %v", kubeconfig, err)
	}

	out := t.TempDir()
	args := []string{"apply", ingressPipeline, "--out", out, "--repetitions", "1", "--var", "duration=3s"}
	for _, v := range []struct{ env, name string }{
		{"BENCHFLOW_K8S_INGRESS_ADDRESS", "ingress_address"},
		{"BENCHFLOW_K8S_INGRESS_CLASS", "ingress_class"},
	} {
		if s := os.Getenv(v.env); s != "" {
			args = append(args, "--var", v.name+"="+s)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	b, err := cmd.CombinedOutput()
	t.Logf("benchflow %v:\n%s", args, b)
	if err != nil {
		t.Fatalf("benchflow apply: %v", err)
	}
	runDir, err := filepath.EvalSymlinks(filepath.Join(out, "latest"))
	if err != nil {
		t.Fatalf("no results/latest: %v", err)
	}
	for _, f := range []string{"manifest.json", "trials.parquet", "latency.parquet"} {
		if st, err := os.Stat(filepath.Join(runDir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}

	// Every trial recorded the cluster's versions (VersionReporter).
	b, err = os.ReadFile(filepath.Join(runDir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m results.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	kubelets := map[string]bool{}
	if nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		for _, n := range nodes.Items {
			kubelets[n.Status.NodeInfo.KubeletVersion] = true
		}
	}
	for _, tr := range m.Trials {
		for _, s := range tr.Services {
			if s.Versions["k8s_server"] != sv.GitVersion {
				t.Errorf("trial %s: service %s: k8s_server %q, want %q", tr.TrialID, s.Name, s.Versions["k8s_server"], sv.GitVersion)
			}
			for _, k := range strings.Split(s.Versions["kubelet"], ", ") {
				if !kubelets[k] {
					t.Errorf("trial %s: service %s: kubelet %q is not a node's (%v)", tr.TrialID, s.Name, k, kubelets)
				}
			}
		}
	}

	// Nothing of the run may be left (namespaces may still be terminating).
	sel := metav1.ListOptions{LabelSelector: providers.LabelManaged + "=true," + providers.LabelRun + "=" + filepath.Base(runDir)}
	if deps, err := cs.AppsV1().Deployments("").List(ctx, sel); err != nil || len(deps.Items) > 0 {
		t.Errorf("deployments left: %v %v", deps, err)
	}
	if ings, err := cs.NetworkingV1().Ingresses("").List(ctx, sel); err != nil || len(ings.Items) > 0 {
		t.Errorf("ingresses left: %v %v", ings, err)
	}
	if nss, err := cs.CoreV1().Namespaces().List(ctx, sel); err == nil {
		for _, ns := range nss.Items {
			if ns.DeletionTimestamp == nil {
				t.Errorf("namespace %s left active", ns.Name)
			}
		}
	}
}
