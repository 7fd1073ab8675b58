package k8s

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	k8stesting "k8s.io/client-go/testing"

	"github.com/benchflow/benchflow/providers"
)

// fakeForward stands in for client-go's port-forward, which needs a real
// API server: it records what was asked and maps local port 0 to
// 40000+remote.
type fakeForward struct {
	mu     sync.Mutex
	pod    string
	specs  []string
	closed bool
}

func (f *fakeForward) open(ctx context.Context, ns, pod string, specs []string) (forwarder, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pod, f.specs = pod, specs
	return f, nil
}

func (f *fakeForward) Ports() map[int]int {
	out := map[int]int{}
	for _, s := range f.specs {
		l, r, _ := strings.Cut(s, ":")
		ln, _ := strconv.Atoi(l)
		rn, _ := strconv.Atoi(r)
		if ln == 0 {
			ln = 40000 + rn
		}
		out[rn] = ln
	}
	return out
}

func (f *fakeForward) Close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
}

func (f *fakeForward) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// testProvider builds a provider on the simulated cluster with fast polls,
// a fake port-forward and a resolver that knows only *.localtest.me.
func testProvider(t *testing.T, cs kubernetes.Interface, cfg Config) (*Provider, *fakeForward) {
	t.Helper()
	p, err := NewWithClient(clientFor(cs), "cluster", cfg)
	if err != nil {
		t.Fatal(err)
	}
	fw := &fakeForward{}
	p.pollInterval = 5 * time.Millisecond
	p.forward = fw.open
	p.lookupHost = func(ctx context.Context, host string) ([]string, error) {
		if strings.HasSuffix(host, ".localtest.me") {
			return []string{"127.0.0.1"}, nil
		}
		return nil, &netError{host}
	}
	return p, fw
}

type netError struct{ host string }

func (e *netError) Error() string { return "lookup " + e.host + ": no such host" }

// leftovers lists every object carrying the managed label, namespaces
// included.
func leftovers(t *testing.T, cs kubernetes.Interface) []string {
	t.Helper()
	ctx := context.Background()
	opts := metav1.ListOptions{LabelSelector: providers.LabelManaged + "=true"}
	var out []string
	add := func(kind string, items []metav1.Object) {
		for _, o := range items {
			out = append(out, kind+" "+o.GetNamespace()+"/"+o.GetName())
		}
	}
	nss, _ := cs.CoreV1().Namespaces().List(ctx, opts)
	cms, _ := cs.CoreV1().ConfigMaps("").List(ctx, opts)
	deps, _ := cs.AppsV1().Deployments("").List(ctx, opts)
	pods, _ := cs.CoreV1().Pods("").List(ctx, opts)
	svcs, _ := cs.CoreV1().Services("").List(ctx, opts)
	ings, _ := cs.NetworkingV1().Ingresses("").List(ctx, opts)
	secs, _ := cs.CoreV1().Secrets("").List(ctx, opts)
	for i := range secs.Items {
		add("secret", []metav1.Object{&secs.Items[i]})
	}
	for i := range nss.Items {
		add("namespace", []metav1.Object{&nss.Items[i]})
	}
	for i := range cms.Items {
		add("configmap", []metav1.Object{&cms.Items[i]})
	}
	for i := range deps.Items {
		add("deployment", []metav1.Object{&deps.Items[i]})
	}
	for i := range pods.Items {
		add("pod", []metav1.Object{&pods.Items[i]})
	}
	for i := range svcs.Items {
		add("service", []metav1.Object{&svcs.Items[i]})
	}
	for i := range ings.Items {
		add("ingress", []metav1.Object{&ings.Items[i]})
	}
	return out
}

func assertNoLeftovers(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	if l := leftovers(t, cs); len(l) > 0 {
		t.Errorf("labelled objects left behind: %v", l)
	}
}

// TestProvisionCreatesRenderedObjects provisions each golden case on the
// simulated cluster and checks that the objects stored in the API are
// exactly the rendered manifests, then that teardown removes them.
func TestProvisionCreatesRenderedObjects(t *testing.T) {
	for _, c := range renderCases {
		t.Run(c.name, func(t *testing.T) {
			s := newSim(t, podsReady)
			p, _ := testProvider(t, s.cs, c.cfg)
			req := c.request(t)
			d, err := p.Provision(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			o, err := p.cfg.build(req)
			if err != nil {
				t.Fatal(err)
			}
			var stored []runtime.Object
			for _, obj := range o.list() {
				stored = append(stored, stripOwner(t, fetch(t, s.cs, obj)))
			}
			got, err := renderYAML(stored)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, c.name, got)

			if err := d.Teardown(context.Background()); err != nil {
				t.Fatal(err)
			}
			assertNoLeftovers(t, s.cs)
		})
	}
}

// stripOwner checks that obj (and a Deployment's pod template) carries this
// process's owner labels, which gc reads, and removes them: the rest must
// equal what render shows.
func stripOwner(t *testing.T, obj runtime.Object) runtime.Object {
	t.Helper()
	check := func(what string, labels map[string]string) {
		for k, v := range providers.SelfOwner().Labels() {
			if labels[k] != v {
				t.Errorf("%s: label %s = %q, want %q (the owner gc checks)", what, k, labels[k], v)
			}
			delete(labels, k)
		}
	}
	a, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	l := a.GetLabels()
	check(fmt.Sprintf("%T %s", obj, a.GetName()), l)
	a.SetLabels(l)
	if d, ok := obj.(*appsv1.Deployment); ok {
		check("pod template of "+d.Name, d.Spec.Template.Labels)
	}
	return obj
}

// fetch reads the stored version of obj and clears what the API server
// adds (resource version, managed fields, status, allocated node ports).
func fetch(t *testing.T, cs kubernetes.Interface, obj runtime.Object) runtime.Object {
	t.Helper()
	ctx := context.Background()
	var got runtime.Object
	var err error
	switch o := obj.(type) {
	case *corev1.Namespace:
		var x *corev1.Namespace
		x, err = cs.CoreV1().Namespaces().Get(ctx, o.Name, metav1.GetOptions{})
		if err == nil {
			x.Status = corev1.NamespaceStatus{}
			got = x
		}
	case *corev1.ConfigMap:
		got, err = cs.CoreV1().ConfigMaps(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
	case *appsv1.Deployment:
		var x *appsv1.Deployment
		x, err = cs.AppsV1().Deployments(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
		if err == nil {
			x.Status = appsv1.DeploymentStatus{}
			got = x
		}
	case *corev1.Service:
		var x *corev1.Service
		x, err = cs.CoreV1().Services(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
		if err == nil {
			for i := range x.Spec.Ports {
				x.Spec.Ports[i].NodePort = 0
			}
			got = x
		}
	case *networkingv1.Ingress:
		got, err = cs.NetworkingV1().Ingresses(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
	}
	if err != nil {
		t.Fatalf("reading the stored %T: %v", obj, err)
	}
	m := got.(metav1.Object)
	m.SetResourceVersion("")
	m.SetManagedFields(nil)
	m.SetUID("")
	m.SetCreationTimestamp(metav1.Time{})
	m.SetGeneration(0)
	// The typed client drops apiVersion/kind; take them from the original.
	got.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	return got
}

func TestEndpointPortForward(t *testing.T) {
	s := newSim(t, podsReady)
	p, fw := testProvider(t, s.cs, Config{})
	req := nginxRequest(t)
	req.Service.Ports = append(req.Service.Ports, providers.Port{Name: "metrics", Container: 9113})
	d, err := p.Provision(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	ep := d.Endpoint()
	if ep.URL() != "http://127.0.0.1:18080" {
		t.Errorf("URL = %q, want the engine's host port through the forward", ep.URL())
	}
	if ep.Ports["metrics"] != 49113 || ep.Ports["http"] != 18080 {
		t.Errorf("Ports = %v", ep.Ports)
	}
	if fw.pod != "nginx-0" || strings.Join(fw.specs, ",") != "18080:80,0:9113" {
		t.Errorf("forwarded to pod %q with %v", fw.pod, fw.specs)
	}
	if ep.Attrs["namespace"] != "benchflow-20261130t044500z-3f9c" || ep.Attrs["pod"] != "nginx-0" || ep.Attrs["expose"] != "port-forward" ||
		ep.Attrs["host_header"] != "127.0.0.1:18080" {
		t.Errorf("Attrs = %v", ep.Attrs)
	}
	if err := d.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !fw.isClosed() {
		t.Error("Teardown left the port-forward open")
	}
	assertNoLeftovers(t, s.cs)
}

func TestEndpointNodePort(t *testing.T) {
	for _, addr := range []string{"", "192.0.2.7"} {
		t.Run("node_address="+addr, func(t *testing.T) {
			s := newSim(t, podsReady)
			p, _ := testProvider(t, s.cs, Config{Expose: ExposeNodePort, NodeAddress: addr})
			d, err := p.Provision(context.Background(), nginxRequest(t))
			if err != nil {
				t.Fatal(err)
			}
			defer d.Teardown(context.Background())
			want := "http://10.1.2.3:30080" // the node's InternalIP, the allocated node port
			if addr != "" {
				want = "http://" + addr + ":30080"
			}
			if got := d.Endpoint().URL(); got != want {
				t.Errorf("URL = %q, want %q", got, want)
			}
		})
	}
}

func TestEndpointIngress(t *testing.T) {
	cases := []struct {
		name     string
		cfg      Config
		simIP    string
		wantURL  string
		wantHost string
	}{
		{
			name:    "address, host resolves there",
			cfg:     Config{Expose: ExposeIngress, IngressHost: "nginx.localtest.me", IngressAddress: "127.0.0.1:8081"},
			wantURL: "http://nginx.localtest.me:8081", wantHost: "nginx.localtest.me",
		},
		{
			name:    "address, host unresolvable",
			cfg:     Config{Expose: ExposeIngress, IngressHost: "nginx.bench.test", IngressAddress: "127.0.0.1:80"},
			wantURL: "http://127.0.0.1:80", wantHost: "nginx.bench.test",
		},
		{
			name:    "address, host resolves elsewhere",
			cfg:     Config{Expose: ExposeIngress, IngressHost: "nginx.localtest.me", IngressAddress: "127.0.0.2:80"},
			wantURL: "http://127.0.0.2:80", wantHost: "nginx.localtest.me",
		},
		{
			name:    "no host",
			cfg:     Config{Expose: ExposeIngress, IngressAddress: "127.0.0.1:8081"},
			wantURL: "http://127.0.0.1:8081", wantHost: "127.0.0.1:8081",
		},
		{
			name:  "address from the Ingress status",
			cfg:   Config{Expose: ExposeIngress, IngressClass: "nginx"},
			simIP: "172.18.0.2", wantURL: "http://172.18.0.2:80", wantHost: "172.18.0.2",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSimWith(t, podsReady, func(s *sim) { s.ingressIP = c.simIP })
			p, _ := testProvider(t, s.cs, c.cfg)
			d, err := p.Provision(context.Background(), nginxRequest(t))
			if err != nil {
				t.Fatal(err)
			}
			ep := d.Endpoint()
			if ep.URL() != c.wantURL || ep.Attrs["host_header"] != c.wantHost || ep.Attrs["ingress"] != "nginx" {
				t.Errorf("URL %q host_header %q ingress %q, want %q %q nginx", ep.URL(), ep.Attrs["host_header"], ep.Attrs["ingress"], c.wantURL, c.wantHost)
			}
			if err := d.Teardown(context.Background()); err != nil {
				t.Fatal(err)
			}
			assertNoLeftovers(t, s.cs)
		})
	}
}

// TestReadinessFailures checks that a rollout that cannot succeed fails
// with the pod's state and events quoted, and leaves nothing behind.
func TestReadinessFailures(t *testing.T) {
	cases := []struct {
		mode    string
		timeout string
		want    []string
	}{
		{podsImagePull, "1m", []string{"container nginx is in ImagePullBackOff", `Back-off pulling image "nginx:alpine"`,
			`Warning Failed: Failed to pull image "nginx:alpine": not found`, "phase Pending on node node-1"}},
		{podsCrashLoop, "1m", []string{"container nginx is in CrashLoopBackOff", "restarts 3",
			"previous instance terminated: Error, exit code 1", "last log lines of nginx:", "| fake logs",
			"Warning BackOff: Back-off restarting failed container nginx"}},
		{podsPending, "150ms", []string{"timed out after 150ms", "available replicas 0/1, ready pods 0/1, ready endpoints 0/1",
			"condition PodScheduled=False (Unschedulable): 0/1 nodes are available: 1 Insufficient cpu.",
			"Warning FailedScheduling"}},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			s := newSim(t, c.mode)
			p, _ := testProvider(t, s.cs, Config{ReadyTimeout: c.timeout})
			d, err := p.Provision(context.Background(), nginxRequest(t))
			if err == nil {
				d.Teardown(context.Background())
				t.Fatal("Provision succeeded")
			}
			t.Logf("the error reads:\n%v", err)
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if !strings.HasPrefix(err.Error(), `deploying "nginx" to namespace "benchflow-20261130t044500z-3f9c"`) {
				t.Errorf("error does not say what failed where: %v", err)
			}
			assertNoLeftovers(t, s.cs)
		})
	}
}

func TestProvisionCancelled(t *testing.T) {
	s := newSim(t, podsPending)
	p, _ := testProvider(t, s.cs, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the Deployment exists, as Ctrl-C during the wait.
		for {
			if _, err := s.cs.AppsV1().Deployments("benchflow-20261130t044500z-3f9c").Get(ctx, "nginx", metav1.GetOptions{}); err == nil {
				cancel()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	_, err := p.Provision(ctx, nginxRequest(t))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	assertNoLeftovers(t, s.cs)
}

// TestTeardownSharedNamespace provisions two services of one trial in the
// run's namespace: it stays while one is up, and goes with the last.
func TestTeardownSharedNamespace(t *testing.T) {
	s := newSim(t, podsReady)
	p, _ := testProvider(t, s.cs, Config{Expose: ExposeNodePort})
	web := nginxRequest(t)
	api := nginxRequest(t)
	api.Service.Name = "api"
	d1, err := p.Provision(context.Background(), web)
	if err != nil {
		t.Fatal(err)
	}
	d2, err := p.Provision(context.Background(), api)
	if err != nil {
		t.Fatal(err)
	}
	ns := d1.(*Deployment).Namespace()
	if err := d2.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.cs.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace deleted while %q still runs: %v", "nginx", err)
	}
	if _, err := s.cs.AppsV1().Deployments(ns).Get(context.Background(), "api", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("deployment api still there after its teardown: %v", err)
	}
	if err := d1.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := d1.Teardown(context.Background()); err != nil {
		t.Errorf("second Teardown: %v", err)
	}
	assertNoLeftovers(t, s.cs)
}

// TestGivenNamespaceKept checks that a namespace named in the config is
// used as it is and never deleted.
func TestGivenNamespaceKept(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}
	s := newSim(t, podsReady, ns)
	p, _ := testProvider(t, s.cs, Config{Namespace: "bench"})
	d, err := p.Provision(context.Background(), nginxRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.cs.CoreV1().Namespaces().Get(context.Background(), "bench", metav1.GetOptions{}); err != nil {
		t.Errorf("the given namespace was deleted: %v", err)
	}
	assertNoLeftovers(t, s.cs)
}

// TestNamespaceTerminating checks that a trial waits for the previous
// trial's namespace to finish terminating, then creates it again.
func TestNamespaceTerminating(t *testing.T) {
	now := metav1.Now()
	old := &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "benchflow-20261130t044500z-3f9c", DeletionTimestamp: &now, Finalizers: []string{"kubernetes"},
			Labels: map[string]string{providers.LabelManaged: "true"}},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
	}
	var polls int
	var mu sync.Mutex
	s := newSimWith(t, podsReady, func(s *sim) {
		s.cs.PrependReactor("get", "namespaces", func(a k8stesting.Action) (bool, runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			polls++
			if polls == 3 { // the namespace controller finishes
				s.cs.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("namespaces"), "", old.Name)
			}
			return false, nil, nil
		})
	}, old)
	p, _ := testProvider(t, s.cs, Config{})
	d, err := p.Provision(context.Background(), nginxRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.cs.CoreV1().Namespaces().Get(context.Background(), old.Name, metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp != nil {
		t.Fatalf("namespace not recreated: %v %v", got, err)
	}
	mu.Lock()
	n := polls
	mu.Unlock()
	if n < 3 {
		t.Errorf("Provision did not wait for the terminating namespace (%d polls)", n)
	}
	if err := d.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertNoLeftovers(t, s.cs)
}

func TestAlive(t *testing.T) {
	s := newSim(t, podsReady)
	p, _ := testProvider(t, s.cs, Config{Expose: ExposeNodePort})
	d, err := p.Provision(context.Background(), nginxRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Teardown(context.Background())
	live := d.(providers.Liveness)
	if err := live.Alive(context.Background()); err != nil {
		t.Fatalf("Alive on a ready deployment: %v", err)
	}
	s.setMode(podsCrashLoop)
	var aerr error
	for i := 0; i < 2000 && aerr == nil; i++ {
		time.Sleep(time.Millisecond)
		aerr = live.Alive(context.Background())
	}
	if aerr == nil || !strings.Contains(aerr.Error(), "CrashLoopBackOff") {
		t.Fatalf("Alive after the container crashed: %v", aerr)
	}
}

func TestProvisionAlreadyExists(t *testing.T) {
	s := newSim(t, podsReady)
	p, _ := testProvider(t, s.cs, Config{Namespace: "bench"})
	left := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "nginx", Namespace: "bench"}}
	if _, err := s.cs.AppsV1().Deployments("bench").Create(context.Background(), left, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := p.Provision(context.Background(), nginxRequest(t))
	if err == nil || !strings.Contains(err.Error(), "benchflow gc") {
		t.Fatalf("err = %v, want a hint at benchflow gc", err)
	}
	// The ConfigMap created before the clash is gone again.
	if _, err := s.cs.CoreV1().ConfigMaps("bench").Get(context.Background(), "nginx-files", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap left after a failed Provision: %v", err)
	}
}

func TestProvisionUnavailable(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "") // no in-cluster fallback either
	t.Setenv("HOME", t.TempDir())
	p, err := New("cluster", Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Provision(context.Background(), nginxRequest(t))
	if !errors.Is(err, providers.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if !strings.HasPrefix(err.Error(), "connecting to the cluster: loading the kubeconfig") {
		t.Errorf("error does not say what and why: %v", err)
	}
}

// TestTeardownWaitsForPodsGone: Teardown returns only once the pods are
// gone from the API server, and with a clear error naming the pods when
// they are still there at the bound (a kubelet that does not stop them).
func TestTeardownWaitsForPodsGone(t *testing.T) {
	for _, stuck := range []bool{false, true} {
		t.Run(fmt.Sprintf("stuck=%v", stuck), func(t *testing.T) {
			var mu sync.Mutex
			deletes := 0
			s := newSimWith(t, podsReady, func(s *sim) {
				s.cs.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
					mu.Lock()
					defer mu.Unlock()
					deletes++
					// A pod is marked terminating first; the kubelet removes it
					// after a few polls — or never.
					if stuck || deletes < 3 {
						return true, nil, nil
					}
					return false, nil, nil
				})
			})
			p, _ := testProvider(t, s.cs, Config{})
			p.podsGone = 200 * time.Millisecond
			d, err := p.Provision(context.Background(), nginxRequest(t))
			if err != nil {
				t.Fatal(err)
			}
			err = d.Teardown(context.Background())
			pods, lerr := s.cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
			if lerr != nil {
				t.Fatal(lerr)
			}
			if !stuck {
				if err != nil || len(pods.Items) != 0 {
					t.Fatalf("Teardown = %v with %d pods left, want nil once they are gone", err, len(pods.Items))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), `pods of "nginx" still exist`) || !strings.Contains(err.Error(), "nginx-") ||
				!strings.Contains(err.Error(), "after they were deleted") {
				t.Fatalf("Teardown with pods that never exit = %v, want an error naming them", err)
			}
		})
	}
}
