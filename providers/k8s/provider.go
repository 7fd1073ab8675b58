package k8s

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/benchflow/benchflow/engine/userfile"
	"github.com/benchflow/benchflow/providers"
)

// Type is the k8s provider type, registered in init.
var Type = providers.TypeOf(providers.Spec[Config]{
	Name: "k8s",
	New: func(name string, c *Config) (providers.Provider, error) {
		return New(name, *c)
	},
	Attrs:  EndpointAttrs,
	GC:     GC,
	Agents: true,
	Grant:  Grant,
	Infra:  Infra,
})

// Infra are the processes of a cluster whose node is this machine: its
// agents and control plane, its container runtime and the ingress
// controllers and proxies that carry traffic to pods. The machine
// accounting counts them as infrastructure only in a trial with a k8s
// service.
var Infra = []string{
	"kubelet", "kube-proxy", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
	"etcd", "coredns", "k3s", "k3s-server", "k3s-agent", "flanneld", "calico-node",
	"containerd", "nginx-ingress-controller", "traefik", "envoy", "haproxy",
}

func init() { providers.Register(Type) }

// EndpointAttrs are the attributes a k8s service exposes to the pipeline as
// service.<name>.<attr> (empty when they do not apply): namespace,
// deployment (also the Service's name), expose, pod (port-forward target),
// ingress (the Ingress name), host_header (the Host header the load should
// send), path (the Ingress path prefix) and cluster_url (the Service's
// address inside the cluster, http://<service>.<namespace>.svc:<port>:
// what load agents running as pods target).
var EndpointAttrs = []string{"namespace", "deployment", "expose", "pod", "ingress", "host_header", "path", "cluster_url"}

var (
	_ providers.Provider     = (*Provider)(nil)
	_ providers.Renderer     = (*Provider)(nil)
	_ providers.ServiceDirer = (*Provider)(nil)
	_ providers.ListenPorter = (*Provider)(nil)
	_ providers.Describer    = (*Provider)(nil)
	_ providers.Deployment   = (*Deployment)(nil)
	_ providers.Liveness     = (*Deployment)(nil)
)

// Provider deploys services on a Kubernetes cluster: a ConfigMap with the
// service's files, a Deployment, a Service and, with expose = "ingress", an
// Ingress. It connects to the cluster only when Provision is first called,
// so Render works without one.
type Provider struct {
	name string
	cfg  *settings

	mu     sync.Mutex
	client *Client
	rest   *rest.Config // nil with an injected client
	key    string       // identifies the cluster for namespace sharing

	// Hooks replaced by tests.
	pollInterval time.Duration
	podsGone     time.Duration // 0 means podsGoneTimeout
	forward      forwardFunc
	lookupHost   func(ctx context.Context, host string) ([]string, error)
}

// New builds a provider from a decoded config. It validates the config
// but does not contact the cluster.
func New(name string, cfg Config) (*Provider, error) {
	s, err := cfg.validate()
	if err != nil {
		return nil, fmt.Errorf("k8s provider %q: %w", name, err)
	}
	return &Provider{
		name:         name,
		cfg:          s,
		pollInterval: time.Second,
		lookupHost:   net.DefaultResolver.LookupHost,
	}, nil
}

// NewWithClient builds a provider that uses the given client instead of
// one built from the kubeconfig (tests fill a Client from client-go's fake
// clientset).
// With expose = "port-forward" such a provider cannot open port-forwards,
// which need a REST config; Provision then fails after the rollout.
func NewWithClient(cs *Client, name string, cfg Config) (*Provider, error) {
	p, err := New(name, cfg)
	if err != nil {
		return nil, err
	}
	p.client = cs
	p.key = fmt.Sprintf("client-%p", cs)
	return p, nil
}

// Name is the provider's name (the second label of its block).
func (p *Provider) Name() string { return p.name }

// Expose reports how services are reached: "port-forward", "nodeport" or
// "ingress".
func (p *Provider) Expose() string { return p.cfg.Expose }

// Describe is a one-line summary for `benchflow plan`: where services go and
// how the load reaches them.
func (p *Provider) Describe() string {
	ns := "namespace per run (benchflow-<run id>)"
	if p.cfg.Namespace != "" {
		ns = "namespace " + p.cfg.Namespace
	}
	how := "through a port-forward opened by benchflow (functional checks only: it is slow)"
	switch p.cfg.Expose {
	case ExposeNodePort:
		how = "through a NodePort on " + orDefault(p.cfg.NodeAddress, "the first node's address")
	case ExposeIngress:
		how = "through the ingress controller at " + orDefault(p.cfg.IngressAddress, "the Ingress status address")
		if p.cfg.IngressHost != "" {
			how += " with Host " + p.cfg.IngressHost
		}
	}
	return fmt.Sprintf("k8s %q: Deployment + Service in %s, load %s", p.name, ns, how)
}

// ServiceDir is where the service's files are mounted in the container.
func (p *Provider) ServiceDir(service string) string { return p.cfg.FilesDir }

// ListenPort is the port the container listens on: the port's container
// number, or its host number when the pipeline gave none.
func (p *Provider) ListenPort(port providers.Port) int {
	if port.Container != 0 {
		return port.Container
	}
	return port.Host
}

// Render returns the manifests Provision would apply for req, as YAML
// documents, without contacting a cluster.
func (p *Provider) Render(req *providers.ProvisionRequest) ([]byte, error) {
	o, err := p.cfg.build(req)
	if err != nil {
		return nil, fmt.Errorf("rendering %q: %w", req.Service.Name, err)
	}
	return renderYAML(o.list())
}

// clientset returns the client, building it from the config on first use.
func (p *Provider) clientset() (*Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client != nil {
		return p.client, nil
	}
	rc, err := restConfig(p.cfg.Kubeconfig, p.cfg.Context, p.cfg.InCluster)
	if err != nil {
		return nil, err
	}
	cs, err := NewClient(rc)
	if err != nil {
		return nil, fmt.Errorf("building a Kubernetes client: %w", err)
	}
	p.client, p.rest, p.key = cs, rc, rc.Host
	return cs, nil
}

// restConfig loads the connection settings: in-cluster, or a kubeconfig
// (explicit path or the default rules) with an optional context. A missing
// configuration wraps providers.ErrUnavailable.
func restConfig(kubeconfig, kubeContext string, inCluster bool) (*rest.Config, error) {
	if inCluster {
		rc, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("loading the in-cluster config: %w: %w", providers.ErrUnavailable, err)
		}
		return rc, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	// client-go reads the files itself: hold them to the rule for every
	// file a user names first, so that a FIFO does not hang it and
	// /dev/zero does not fill the memory.
	for _, p := range rules.GetLoadingPrecedence() {
		f, err := userfile.Open(p, userfile.MaxSize)
		if errors.Is(err, fs.ErrNotExist) {
			continue // client-go says what a missing file means
		}
		if err != nil {
			return nil, fmt.Errorf("loading the kubeconfig %w", err)
		}
		f.Close()
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: kubeContext}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) || errors.Is(err, clientcmd.ErrEmptyConfig) {
			return nil, fmt.Errorf("loading the kubeconfig: %w: no kubeconfig found (set kubeconfig, $KUBECONFIG or ~/.kube/config)", providers.ErrUnavailable)
		}
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	return rc, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
