package k8s

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchflow/benchflow/providers"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.yaml from the current output")

const nginxConf = `events {}
http {
    access_log off;
    server {
        listen 80;
        location / { root /usr/share/nginx/html; }
    }
}
`

// nginxRequest is study S1's service as the engine hands it over, with its
// files rendered into a temporary folder.
func nginxRequest(t testing.TB) *providers.ProvisionRequest {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(nginxConf), 0o644); err != nil {
		t.Fatal(err)
	}
	return &providers.ProvisionRequest{
		RunID:   "20261130T044500Z-3f9c",
		TrialID: "t001-r1",
		Service: providers.ServiceSpec{
			Name:    "nginx",
			Image:   "nginx:alpine",
			Command: []string{"nginx", "-g", "daemon off;", "-c", "/etc/benchflow/nginx.conf"},
			Env:     map[string]string{"ACCESS_LOG": "off", "A_FIRST": "1"},
			Dir:     dir,
			Files:   []providers.File{{Name: "nginx.conf", HostPath: conf, Mount: "/etc/nginx/nginx.conf", Mode: 0o644}},
			Ports:   []providers.Port{{Name: "http", Container: 80, Host: 18080}},
			Health:  providers.Health{HTTPPath: "/", PortName: "http", Interval: 100 * time.Millisecond, Timeout: 30 * time.Second},
		},
	}
}

// renderCase is one point of the settings matrix the golden files cover.
type renderCase struct {
	name   string
	cfg    Config
	modify func(t *testing.T, req *providers.ProvisionRequest)
}

var renderCases = []renderCase{
	{name: "port-forward"},
	{
		name: "nodeport",
		cfg: Config{
			Namespace: "bench", Expose: ExposeNodePort, Replicas: 3,
			CPU: "2", Memory: "256Mi", ImagePullPolicy: "Never",
			NodeSelector: map[string]string{"kubernetes.io/hostname": "node-1"},
		},
		modify: func(t *testing.T, req *providers.ProvisionRequest) {
			bin := filepath.Join(req.Service.Dir, "payload.bin")
			data := make([]byte, 64)
			for i := range data {
				data[i] = byte(255 - i)
			}
			if err := os.WriteFile(bin, data, 0o600); err != nil {
				t.Fatal(err)
			}
			req.Service.Files = append(req.Service.Files, providers.File{Name: "payload.bin", HostPath: bin, Mode: 0o600})
			req.Service.Ports = append(req.Service.Ports, providers.Port{Name: "metrics", Container: 9113, Host: 19113})
			req.Service.Health = providers.Health{TCP: true, PortName: "metrics", Interval: 2 * time.Second}
		},
	},
	{
		name: "ingress",
		cfg: Config{
			Expose: ExposeIngress, IngressClass: "nginx", IngressHost: "nginx.bench.test",
			IngressPath: "/app", IngressAddress: "127.0.0.1:80", FilesDir: "/srv/conf",
		},
	},
	{
		name: "odd-names",
		cfg:  Config{Replicas: 5, ServiceType: "NodePort"},
		modify: func(t *testing.T, req *providers.ProvisionRequest) {
			req.RunID = "20261130T044500Z-3F9C"
			req.TrialID = "deploy=k8s,access_log=on/rep=2"
			req.Service.Name = "My_Web.Server"
			req.Service.Replicas = 2
			req.Service.Files = nil
			req.Service.Command = nil
			req.Service.Env = nil
			req.Service.Health = providers.Health{}
			req.Service.Ports = []providers.Port{{Name: "", Host: 8080}}
		},
	},
}

func (c renderCase) request(t *testing.T) *providers.ProvisionRequest {
	req := nginxRequest(t)
	if c.modify != nil {
		c.modify(t, req)
	}
	return req
}

func TestRenderGolden(t *testing.T) {
	for _, c := range renderCases {
		t.Run(c.name, func(t *testing.T) {
			p, err := New("cluster", c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Render(c.request(t))
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, c.name, got)
		})
	}
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden.yaml")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs from the golden file (-want +got):\n%s", path, d)
	}
}

// TestRenderFields checks, beyond the golden files, the fields each
// setting must produce, so a wrong golden file cannot hide a regression.
func TestRenderFields(t *testing.T) {
	for _, c := range renderCases {
		t.Run(c.name, func(t *testing.T) {
			p, err := New("cluster", c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Render(c.request(t))
			if err != nil {
				t.Fatal(err)
			}
			y := string(out)
			mustContain := map[string][]string{
				"port-forward": {"kind: Namespace", "name: benchflow-20261130t044500z-3f9c", "type: ClusterIP",
					"mountPath: /etc/benchflow", "subPath: nginx.conf", "mountPath: /etc/nginx/nginx.conf", "path: /", "- daemon off;"},
				"nodeport": {"namespace: bench", "replicas: 3", "type: NodePort", "cpu: \"2\"", "memory: 256Mi",
					"imagePullPolicy: Never", "kubernetes.io/hostname: node-1", "binaryData:", "mode: 384", "tcpSocket:", "port: 9113"},
				"ingress": {"kind: Ingress", "ingressClassName: nginx", "host: nginx.bench.test", "path: /app",
					"pathType: Prefix", "mountPath: /srv/conf", "apiVersion: networking.k8s.io/v1"},
				"odd-names": {"name: my-web-server", "replicas: 2", "containerPort: 8080", "name: p0", "type: NodePort"},
			}[c.name]
			for _, s := range mustContain {
				if !strings.Contains(y, s) {
					t.Errorf("rendered YAML lacks %q:\n%s", s, y)
				}
			}
			if c.name != "port-forward" && c.cfg.Namespace != "" && strings.Contains(y, "kind: Namespace") {
				t.Errorf("a given namespace must not be rendered as an object")
			}
			if c.name != "ingress" && strings.Contains(y, "kind: Ingress") {
				t.Errorf("expose = %q must not create an Ingress", c.cfg.Expose)
			}
			if n := strings.Count(y, "dev.benchflow.managed: \"true\""); n < 3 {
				t.Errorf("found the managed label %d times, want it on every object", n)
			}
		})
	}
}

func TestRenderWithoutCluster(t *testing.T) {
	// A kubeconfig that does not exist must not matter to Render.
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	p, err := New("cluster", Config{Kubeconfig: "/nonexistent/kubeconfig"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Render(nginxRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	docs := bytes.Split(out, []byte("\n---\n"))
	if len(docs) != 4 {
		t.Errorf("got %d YAML documents, want Namespace, ConfigMap, Deployment, Service", len(docs))
	}
}
