package k8s_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/benchflow/benchflow/providers"
)

const nodeportPipeline = "testdata/acc/nodeport.hcl"

// accCluster returns the kubeconfig path, a client and the benchflow binary
// for the acceptance tests, or skips: they need BENCHFLOW_ACC=1 and
// $KUBECONFIG naming a reachable cluster whose node has nginx:alpine
// (make cluster-up; make testacc-k8s).
func accCluster(t *testing.T) (string, kubernetes.Interface, string) {
	t.Helper()
	if os.Getenv("BENCHFLOW_ACC") != "1" {
		t.Skip("acceptance test: set BENCHFLOW_ACC=1 (make testacc-k8s) to run it against a real cluster")
	}
	kc := os.Getenv("KUBECONFIG")
	if kc == "" || strings.Contains(kc, string(filepath.ListSeparator)) {
		t.Skip("acceptance test: set KUBECONFIG to one kubeconfig file (make cluster-up writes one)")
	}
	if _, err := os.Stat(kc); err != nil {
		t.Skipf("acceptance test: %v", err)
	}
	bin := os.Getenv("BENCHFLOW_BIN")
	if bin == "" {
		bin = "../../bin/benchflow"
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no benchflow binary (%v): run make build or set BENCHFLOW_BIN", err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatalf("loading %s: %v", kc, err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		t.Fatalf("the cluster of %s does not answer: %v", kc, err)
	}
	return kc, cs, bin
}

// noDefaultKubeconfig makes a command see neither $KUBECONFIG nor
// ~/.kube/config: only what it is told reaches the cluster.
func noDefaultKubeconfig(t *testing.T, cmd *exec.Cmd) {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "KUBECONFIG=") && !strings.HasPrefix(e, "HOME=") {
			env = append(env, e)
		}
	}
	cmd.Env = append(env, "HOME="+t.TempDir())
}

// syncBuffer is a bytes.Buffer safe for a command writing and a test reading.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var runLine = regexp.MustCompile(`(?m)^run (\S+): \d+ trials`)

// liveNamespace waits until the run whose console output is out has a
// ready Deployment in its namespace (benchflow-<run id>), and returns it.
func liveNamespace(ctx context.Context, t *testing.T, cs kubernetes.Interface, out *syncBuffer, done <-chan error) string {
	t.Helper()
	for ctx.Err() == nil {
		select {
		case err := <-done:
			t.Fatalf("run A ended before its service was ready (%v):\n%s", err, out.String())
		default:
		}
		if m := runLine.FindStringSubmatch(out.String()); m != nil {
			ns := "benchflow-" + strings.ToLower(m[1])
			deps, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
			if err == nil {
				for _, d := range deps.Items {
					if d.Status.AvailableReplicas > 0 {
						return ns
					}
				}
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("run A never had a ready Deployment:\n%s", out.String())
	return ""
}

func namespaceActive(ctx context.Context, cs kubernetes.Interface, name string) (bool, string) {
	ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	if ns.DeletionTimestamp != nil || ns.Status.Phase != corev1.NamespaceActive {
		return false, "terminating since " + ns.DeletionTimestamp.String()
	}
	return true, ""
}

// TestAccGCLeavesLiveRunAlone: while run A loads its service, `benchflow
// gc` (of that cluster) and a second apply (whose start-up gc looks at the
// same cluster) leave A's namespace alone, and A's trial succeeds. Before
// owners were recorded both deleted every managed namespace, A's included.
func TestAccGCLeavesLiveRunAlone(t *testing.T) {
	kc, cs, bin := accCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	outA := t.TempDir()
	logA := &syncBuffer{}
	a := exec.CommandContext(ctx, bin, "apply", nodeportPipeline, "--out", outA, "--var", "duration=25s", "--var", "kubeconfig="+kc)
	a.Stdout, a.Stderr = logA, logA
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Wait() }()
	nsA := liveNamespace(ctx, t, cs, logA, done)
	t.Logf("run A (pid %d) is live in namespace %s", a.Process.Pid, nsA)

	gc := exec.CommandContext(ctx, bin, "gc", "--kubeconfig", kc, "-v")
	b, err := gc.CombinedOutput()
	t.Logf("benchflow gc --kubeconfig:\n%s", b)
	if err != nil {
		t.Errorf("gc: %v", err)
	}
	if ok, why := namespaceActive(ctx, cs, nsA); !ok {
		t.Errorf("after benchflow gc, run A's namespace %s is %s", nsA, why)
	}
	if !strings.Contains(string(b), "kept k8s namespace "+nsA) {
		t.Errorf("gc -v does not report keeping %s", nsA)
	}

	b, err = exec.CommandContext(ctx, bin, "apply", nodeportPipeline, "--out", t.TempDir(), "--var", "duration=1s", "--var", "kubeconfig="+kc).CombinedOutput()
	t.Logf("run B:\n%s", b)
	if err != nil {
		t.Errorf("run B: %v", err)
	}
	if ok, why := namespaceActive(ctx, cs, nsA); !ok {
		t.Errorf("after run B started, run A's namespace %s is %s", nsA, why)
	}

	err = <-done
	t.Logf("run A:\n%s", logA.String())
	if err != nil {
		t.Fatalf("run A: %v", err)
	}
	runDir, err := filepath.EvalSymlinks(filepath.Join(outA, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(runDir, "manifest.json"))
	var m struct{ Status string }
	if err == nil {
		err = json.Unmarshal(raw, &m)
	}
	if err != nil || m.Status != "ok" {
		t.Errorf("run A's manifest is not ok (%v):\n%s", err, raw)
	}
}

// TestAccGCReachesNamedCluster: with no default kubeconfig at all, gc finds
// a crashed run's namespace on the cluster the pipeline's kubeconfig
// variable names, and on the one --kubeconfig names. Before, gc always used
// the default kubeconfig and skipped.
func TestAccGCReachesNamedCluster(t *testing.T) {
	kc, cs, bin := accCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A leftover as a killed run leaves it: its owner ran here and is gone.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	me := providers.SelfOwner()
	for _, how := range [][]string{
		{"gc", nodeportPipeline, "--var", "kubeconfig=" + kc},
		{"gc", "--kubeconfig", kc},
	} {
		name := "benchflow-acc-gc-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		labels := providers.Owner{Host: me.Host, PID: dead.Process.Pid, Boot: me.Boot}.Labels()
		labels[providers.LabelManaged] = "true"
		labels[providers.LabelRun] = "20261201T000000Z-dead"
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, bin, how...)
		noDefaultKubeconfig(t, cmd)
		b, err := cmd.CombinedOutput()
		t.Logf("benchflow %s:\n%s", strings.Join(how, " "), b)
		if err != nil {
			t.Errorf("%v", err)
		}
		if !strings.Contains(string(b), "removed k8s: k8s namespace "+name) {
			t.Errorf("benchflow %s did not remove the leftover namespace %s", strings.Join(how, " "), name)
		}
		if ok, _ := namespaceActive(ctx, cs, name); ok {
			t.Errorf("namespace %s is still active", name)
			_ = cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
		}
	}
}
