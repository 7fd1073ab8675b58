package k8s

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/benchflow/benchflow/providers"
)

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Expose: "loadbalancer"}, `expose: "loadbalancer" is not one of`},
		{Config{InCluster: true, Context: "kind"}, "in_cluster: cannot be combined"},
		{Config{Namespace: "Bench_1"}, `namespace: "Bench_1" is not a valid namespace name`},
		{Config{ServiceType: "External"}, `service_type: "External" is not one of`},
		{Config{Expose: ExposeNodePort, ServiceType: "ClusterIP"}, "service_type: expose = \"nodeport\" needs a NodePort"},
		{Config{IngressHost: "x.test"}, `ingress_host: only applies with expose = "ingress"`},
		{Config{Expose: ExposeIngress, IngressPath: "app"}, `ingress_path: "app" must start with "/"`},
		{Config{Expose: ExposeIngress, IngressAddress: "127.0.0.1"}, `ingress_address: "127.0.0.1" is not host:port`},
		{Config{Expose: ExposeIngress, IngressAddress: "127.0.0.1:99999"}, "ingress_address: \"127.0.0.1:99999\": port \"99999\" is not a number"},
		{Config{Expose: ExposeIngress, IngressHost: "bad host"}, `ingress_host: "bad host"`},
		{Config{NodeAddress: "10.0.0.1"}, `node_address: only applies with expose = "nodeport"`},
		{Config{Replicas: -1}, "replicas: -1 is negative"},
		{Config{CPU: "two"}, `cpu: "two" is not a positive quantity`},
		{Config{Memory: "-1Gi"}, `memory: "-1Gi" is not a positive quantity`},
		{Config{NodeSelector: map[string]string{"zone": "a b"}}, `node_selector: value "a b" of "zone"`},
		{Config{ReadyTimeout: "soon"}, `ready_timeout: "soon" is not a positive duration`},
		{Config{ReadyTimeout: "0"}, `ready_timeout: "0" is not a positive duration`},
		{Config{ImagePullPolicy: "Sometimes"}, `image_pull_policy: "Sometimes" is not one of`},
		{Config{FilesDir: "etc/x"}, `files_dir: "etc/x" must be an absolute path`},
	}
	for _, c := range cases {
		_, err := New("cluster", c.cfg)
		if err == nil {
			t.Errorf("%+v: no error, want %q", c.cfg, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), `k8s provider "cluster": `) {
			t.Errorf("%+v:\n got %v\nwant k8s provider \"cluster\": …%s…", c.cfg, err, c.want)
		}
		// Validate finds the same problem and names its attribute, so
		// the engine can point at it in the file.
		attrs, other := providers.ConfigErrors(c.cfg.Validate())
		attr, _, _ := strings.Cut(c.want, ":")
		if len(other) > 0 || len(attrs) == 0 || attrs[0].Attr != attr {
			t.Errorf("%+v: Validate gives %v and %v, want a *providers.ConfigError for %s", c.cfg, attrs, other, attr)
		}
	}
}

// TestReadyTimeoutGrammar: ready_timeout reads durations as every step
// does (units.ParseDuration): a bare number is seconds.
func TestReadyTimeoutGrammar(t *testing.T) {
	for in, want := range map[string]time.Duration{"90": 90 * time.Second, "1m30s": 90 * time.Second, "0.5": 500 * time.Millisecond} {
		p, err := New("cluster", Config{ReadyTimeout: in})
		if err != nil || p.cfg.readyTimeout != want {
			t.Errorf("ready_timeout %q: %v, %v; want %v", in, p, err, want)
		}
	}
}

// TestConfigSuggestions pins the "Did you mean" of the enumerated
// attributes; they ignore case, as service_type's parsing does.
func TestConfigSuggestions(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Expose: "ingres"}, `expose: "ingres" is not one of "port-forward", "nodeport", "ingress". Did you mean "ingress"?`},
		{Config{Expose: "Ingress"}, `Did you mean "ingress"?`},
		{Config{ServiceType: "nodeprot"}, `service_type: "nodeprot" is not one of "ClusterIP", "NodePort", "LoadBalancer". Did you mean "NodePort"?`},
		{Config{ImagePullPolicy: "always"}, `Did you mean "Always"?`},
		{Config{ImagePullPolicy: "Sometimes"}, `image_pull_policy: "Sometimes" is not one of "Always", "IfNotPresent", "Never"`},
	} {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: Validate() = %v, want …%s…", c.cfg, err, c.want)
		}
		if strings.HasSuffix(c.want, "Never\"") && strings.Contains(err.Error(), "Did you mean") {
			t.Errorf("%+v: %v suggests an option far from the value", c.cfg, err)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	p, err := New("cluster", Config{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Expose() != ExposePortForward || p.ServiceDir("nginx") != DefaultFilesDir ||
		p.cfg.readyTimeout != DefaultReadyTimeout || p.cfg.serviceType != corev1.ServiceTypeClusterIP {
		t.Errorf("defaults: expose %q dir %q timeout %s type %s", p.Expose(), p.ServiceDir("nginx"), p.cfg.readyTimeout, p.cfg.serviceType)
	}
	np, err := New("np", Config{Expose: ExposeNodePort})
	if err != nil {
		t.Fatal(err)
	}
	if np.cfg.serviceType != corev1.ServiceTypeNodePort {
		t.Errorf("expose = nodeport gives a %s service", np.cfg.serviceType)
	}
	if got := p.ListenPort(providers.Port{Container: 80, Host: 18080}); got != 80 {
		t.Errorf("ListenPort = %d, want the container port", got)
	}
	for _, d := range []string{p.Describe(), np.Describe()} {
		if !strings.Contains(d, "load through") {
			t.Errorf("Describe() = %q", d)
		}
	}
}

func TestRegistered(t *testing.T) {
	typ, ok := providers.Lookup("k8s")
	if !ok {
		t.Fatal("the k8s provider type is not registered")
	}
	if !strings.Contains(strings.Join(typ.Attrs, ","), "host_header") || typ.GC == nil {
		t.Errorf("type declares attrs %v (gc set: %v)", typ.Attrs, typ.GC != nil)
	}
	cfg, ok := typ.NewConfig().(*Config)
	if !ok {
		t.Fatalf("NewConfig returns %T", typ.NewConfig())
	}
	cfg.Expose = ExposeIngress
	prov, err := typ.New(&providers.NewRequest{Name: "cluster", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := prov.(providers.Renderer); !ok {
		t.Error("the provider is not a Renderer")
	}
	if prov.(*Provider).Expose() != ExposeIngress {
		t.Error("the decoded config was not used")
	}
	if _, err := typ.New(&providers.NewRequest{Name: "x", Config: struct{}{}}); err == nil {
		t.Error("a config of the wrong type was accepted")
	}
	if _, err := typ.New(&providers.NewRequest{Name: "x"}); err != nil {
		t.Errorf("an empty block: %v", err)
	}
}

func TestBuildErrors(t *testing.T) {
	cases := []struct {
		name   string
		modify func(t *testing.T, req *providers.ProvisionRequest)
		want   string
	}{
		{"no image", func(t *testing.T, r *providers.ProvisionRequest) { r.Service.Image = "" }, `service "nginx" has no image`},
		{"no port", func(t *testing.T, r *providers.ProvisionRequest) { r.Service.Ports = nil }, `service "nginx" declares no port`},
		{"port without number", func(t *testing.T, r *providers.ProvisionRequest) { r.Service.Ports = []providers.Port{{Name: "http"}} },
			`port "http" has no container port`},
		{"missing file", func(t *testing.T, r *providers.ProvisionRequest) { r.Service.Files[0].HostPath += ".gone" },
			`reading file "nginx.conf"`},
		{"bad key", func(t *testing.T, r *providers.ProvisionRequest) { r.Service.Files[0].Name = "a b" },
			`file "a b" cannot be a ConfigMap key`},
		{"mount in files_dir", func(t *testing.T, r *providers.ProvisionRequest) { r.Service.Files[0].Mount = "/etc/benchflow/x.conf" },
			`is inside files_dir "/etc/benchflow"`},
		{"relative mount", func(t *testing.T, r *providers.ProvisionRequest) { r.Service.Files[0].Mount = "nginx.conf" },
			`mount "nginx.conf" is not an absolute path`},
		{"two files one mount", func(t *testing.T, r *providers.ProvisionRequest) {
			f := r.Service.Files[0]
			f.Name = "other.conf"
			r.Service.Files = append(r.Service.Files, f)
		}, `files "nginx.conf" and "other.conf" are both mounted at "/etc/nginx/nginx.conf"`},
		{"too big", func(t *testing.T, r *providers.ProvisionRequest) {
			big := filepath.Join(r.Service.Dir, "big.bin")
			if err := os.WriteFile(big, make([]byte, maxConfigMapBytes), 0o644); err != nil {
				t.Fatal(err)
			}
			r.Service.Files = append(r.Service.Files, providers.File{Name: "big.bin", HostPath: big})
		}, `files total more than 1 MiB, the limit of a ConfigMap (at "big.bin")`},
	}
	p, err := New("cluster", Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := nginxRequest(t)
			c.modify(t, req)
			_, err := p.Render(req)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestNames(t *testing.T) {
	ids := []string{
		"20261130T044500Z-3f9c", "t001-r1", "deploy=k8s,access_log=on/rep=2", "My_Web.Server", "",
		"-lead", strings.Repeat("x", 80), strings.Repeat("x", 80) + "y", "ünïcødé", "9lives",
	}
	seen := map[string]string{}
	for _, id := range ids {
		lv := labelValue(id)
		if msgs := validation.IsValidLabelValue(lv); len(msgs) > 0 {
			t.Errorf("labelValue(%q) = %q: %v", id, lv, msgs)
		}
		if other, dup := seen[lv]; dup {
			t.Errorf("labelValue maps %q and %q to %q", other, id, lv)
		}
		seen[lv] = id
		on := objectName(id)
		if msgs := validation.IsDNS1035Label(on + "-files"); len(msgs) > 0 {
			t.Errorf("objectName(%q) = %q: %v", id, on, msgs)
		}
		ns := runNamespace(id)
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			t.Errorf("runNamespace(%q) = %q: %v", id, ns, msgs)
		}
	}
	if objectName(strings.Repeat("x", 80)) == objectName(strings.Repeat("x", 80)+"y") {
		t.Error("long names that differ in their tail get the same object name")
	}
	if got := labelValue("20261130T044500Z-3f9c"); got != "20261130T044500Z-3f9c" {
		t.Errorf("a valid id was changed: %q", got)
	}
	for i, name := range []string{"http", "HTTP", "metrics-exporter-long", "80", ""} {
		if msgs := validation.IsValidPortName(portName(name, i)); len(msgs) > 0 {
			t.Errorf("portName(%q) = %q: %v", name, portName(name, i), msgs)
		}
	}
}

// TestGC creates leftovers of two runs and an unrelated object, and checks
// that gc removes exactly those of the named run, then all managed ones.
func TestGC(t *testing.T) {
	ctx := context.Background()
	s := newSim(t, podsReady)
	lbl := func(run string) map[string]string {
		return map[string]string{providers.LabelManaged: "true", providers.LabelRun: labelValue(run)}
	}
	runA, runB := "20261130T010000Z-aaaa", "20261130T020000Z-bbbb"
	mk := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: runNamespace(runA), Labels: lbl(runA)}}, metav1.CreateOptions{})
	mk(err)
	_, err = s.cs.CoreV1().ConfigMaps("bench").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a-files", Namespace: "bench", Labels: lbl(runA)}}, metav1.CreateOptions{})
	mk(err)
	_, err = s.cs.AppsV1().Deployments("bench").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "bench", Labels: lbl(runB)}}, metav1.CreateOptions{})
	mk(err)
	_, err = s.cs.CoreV1().Services("bench").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "bench", Labels: lbl(runB)}}, metav1.CreateOptions{})
	mk(err)
	_, err = s.cs.NetworkingV1().Ingresses("bench").Create(ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "bench", Labels: lbl(runA)}}, metav1.CreateOptions{})
	mk(err)
	_, err = s.cs.CoreV1().Pods("bench").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b-0", Namespace: "bench", Labels: lbl(runB)}}, metav1.CreateOptions{})
	mk(err)
	_, err = s.cs.CoreV1().ConfigMaps("bench").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "not-ours", Namespace: "bench"}}, metav1.CreateOptions{})
	mk(err)

	removed, err := gc(ctx, clientFor(s.cs), &providers.GCRequest{RunID: runA})
	if err != nil {
		t.Fatal(err)
	}
	want := "k8s namespace benchflow-20261130t010000z-aaaa,k8s ingress bench/a,k8s configmap bench/a-files"
	if got := strings.Join(removed, ","); got != want {
		t.Errorf("gc(%s) removed %s\nwant %s", runA, got, want)
	}
	if l := leftovers(t, s.cs); len(l) != 3 {
		t.Errorf("after gc of run A: %v, want run B's deployment, service and pod", l)
	}
	removed, err = gc(ctx, clientFor(s.cs), &providers.GCRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 3 {
		t.Errorf("gc of every run removed %v", removed)
	}
	assertNoLeftovers(t, s.cs)
	if _, err := s.cs.CoreV1().ConfigMaps("bench").Get(ctx, "not-ours", metav1.GetOptions{}); err != nil {
		t.Errorf("gc removed an object it did not label: %v", err)
	}
}

func TestGCUnavailable(t *testing.T) {
	t.Run("no kubeconfig", func(t *testing.T) {
		t.Setenv("KUBECONFIG", "")
		t.Setenv("KUBERNETES_SERVICE_HOST", "") // no in-cluster fallback either
		t.Setenv("HOME", t.TempDir())
		_, err := GC(context.Background(), &providers.GCRequest{})
		if !errors.Is(err, providers.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
	})
	t.Run("nothing listening", func(t *testing.T) {
		// A kubeconfig pointing at a loopback port nobody listens on.
		kc := filepath.Join(t.TempDir(), "config")
		conf := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
		if err := os.WriteFile(kc, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("KUBECONFIG", kc)
		_, err := GC(context.Background(), &providers.GCRequest{})
		if !errors.Is(err, providers.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
	})
}
