package k8s

import (
	"errors"
	"fmt"
	"net"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/benchflow/benchflow/engine/diag"
	"github.com/benchflow/benchflow/engine/units"
	"github.com/benchflow/benchflow/providers"
)

// Ways a service is reached from the host running benchflow.
const (
	ExposeIngress     = "ingress"
	ExposeNodePort    = "nodeport"
	ExposePortForward = "port-forward"
)

// Defaults applied by New.
const (
	DefaultFilesDir     = "/etc/benchflow"
	DefaultReadyTimeout = 2 * time.Minute
	DefaultIngressPath  = "/"
)

// DefaultIngressProcesses are the ingress controllers whose host processes
// a k8s service with expose = "ingress" reports: ingress-nginx's controller
// and Traefik (the local test cluster's).
var DefaultIngressProcesses = []string{"nginx-ingress-controller", "traefik"}

// Config is the body of a `provider "k8s" "<name>" {}` block. Every
// attribute is optional.
type Config struct {
	// Kubeconfig is the path of a kubeconfig file; empty means the usual
	// rules ($KUBECONFIG, then ~/.kube/config).
	Kubeconfig string `hcl:"kubeconfig,optional"`
	// Context selects a kubeconfig context; empty means the current one.
	Context string `hcl:"context,optional"`
	// InCluster uses the service account of the pod benchflow runs in.
	InCluster bool `hcl:"in_cluster,optional"`
	// Namespace is where objects are created. Empty means one namespace
	// per run, benchflow-<run id lowercased>, created and deleted by
	// benchflow.
	Namespace string `hcl:"namespace,optional"`
	// Expose is "port-forward" (default), "nodeport" or "ingress".
	Expose string `hcl:"expose,optional"`
	// ServiceType is the Kubernetes Service type: "ClusterIP" (default,
	// "NodePort" with expose = "nodeport") or "NodePort" or "LoadBalancer".
	ServiceType string `hcl:"service_type,optional"`
	// IngressClass is spec.ingressClassName of the Ingress.
	IngressClass string `hcl:"ingress_class,optional"`
	// IngressHost is the host rule of the Ingress (empty: any host).
	IngressHost string `hcl:"ingress_host,optional"`
	// IngressPath is the path prefix of the Ingress rule, default "/".
	IngressPath string `hcl:"ingress_path,optional"`
	// IngressAddress is host:port where the ingress controller answers
	// from the benchflow host ("127.0.0.1:80"). Empty means the address
	// the controller publishes in the Ingress status, port 80.
	IngressAddress string `hcl:"ingress_address,optional"`
	// IngressProcesses are the process names of the ingress controller
	// (comm or argv[0]'s base name) reported to collect steps as "infra"
	// when the node is this machine; default DefaultIngressProcesses.
	IngressProcesses []string `hcl:"ingress_processes,optional"`
	// NodeAddress is the node host or IP used with expose = "nodeport";
	// empty means the first node's InternalIP (or ExternalIP).
	NodeAddress string `hcl:"node_address,optional"`
	// Replicas is used when the service does not set replicas; 0 means 1.
	Replicas int `hcl:"replicas,optional"`
	// CPU and Memory are Kubernetes quantities ("2", "500m", "256Mi"),
	// set as both requests and limits (Guaranteed QoS when both are set).
	CPU    string `hcl:"cpu,optional"`
	Memory string `hcl:"memory,optional"`
	// NodeSelector constrains the pods to labelled nodes.
	NodeSelector map[string]string `hcl:"node_selector,optional"`
	// ReadyTimeout bounds the wait for the rollout, default "2m".
	ReadyTimeout string `hcl:"ready_timeout,optional"`
	// ImagePullPolicy is "Always", "IfNotPresent" or "Never"; empty
	// leaves the Kubernetes default.
	ImagePullPolicy string `hcl:"image_pull_policy,optional"`
	// FilesDir is where the service's files are mounted in the container
	// (self.dir), default "/etc/benchflow".
	FilesDir string `hcl:"files_dir,optional"`
}

// settings is a validated Config with defaults applied.
type settings struct {
	Config
	serviceType  corev1.ServiceType
	cpu, memory  *resource.Quantity
	readyTimeout time.Duration
	pullPolicy   corev1.PullPolicy
}

// Validate checks c as New will (providers.Validator): each problem is a
// *providers.ConfigError naming the attribute, so the engine reports it
// at its place in the file.
func (c *Config) Validate() error {
	_, err := c.validate()
	return err
}

// validate checks c and returns it with defaults applied. Each error is a
// *providers.ConfigError naming the attribute at fault (joined when there
// are several).
func (c Config) validate() (*settings, error) {
	s := &settings{Config: c}
	var errs []error
	bad := func(attr, format string, args ...any) {
		errs = append(errs, &providers.ConfigError{Attr: attr, Msg: fmt.Sprintf(format, args...)})
	}
	// oneOf refuses v, which is none of options, with a suggestion when
	// one is close.
	oneOf := func(attr, v string, options ...string) {
		quoted := make([]string, len(options))
		for i, o := range options {
			quoted[i] = strconv.Quote(o)
		}
		msg := fmt.Sprintf("%q is not one of %s", v, strings.Join(quoted, ", "))
		if hint := suggest(v, options); hint != "" {
			msg += "." + hint
		}
		bad(attr, "%s", msg)
	}

	if c.InCluster && (c.Kubeconfig != "" || c.Context != "") {
		bad("in_cluster", "cannot be combined with kubeconfig or context")
	}
	if c.Namespace != "" {
		for _, m := range validation.IsDNS1123Label(c.Namespace) {
			bad("namespace", "%q is not a valid namespace name: %s", c.Namespace, m)
		}
	}

	switch c.Expose {
	case "":
		s.Expose = ExposePortForward
	case ExposeIngress, ExposeNodePort, ExposePortForward:
	default:
		oneOf("expose", c.Expose, ExposePortForward, ExposeNodePort, ExposeIngress)
	}

	switch strings.ToLower(c.ServiceType) {
	case "":
		s.serviceType = corev1.ServiceTypeClusterIP
		if s.Expose == ExposeNodePort {
			s.serviceType = corev1.ServiceTypeNodePort
		}
	case "clusterip":
		s.serviceType = corev1.ServiceTypeClusterIP
	case "nodeport":
		s.serviceType = corev1.ServiceTypeNodePort
	case "loadbalancer":
		s.serviceType = corev1.ServiceTypeLoadBalancer
	default:
		oneOf("service_type", c.ServiceType, "ClusterIP", "NodePort", "LoadBalancer")
	}
	if s.Expose == ExposeNodePort && s.serviceType == corev1.ServiceTypeClusterIP {
		bad("service_type", "expose = %q needs a NodePort or LoadBalancer service, not ClusterIP", ExposeNodePort)
	}

	c.validateIngress(s, bad)
	c.validateResources(s, bad)

	s.readyTimeout = DefaultReadyTimeout
	if c.ReadyTimeout != "" {
		d, err := units.ParseDuration(c.ReadyTimeout)
		if err != nil || d <= 0 {
			bad("ready_timeout", "%q is not a positive duration such as \"90s\"", c.ReadyTimeout)
		} else {
			s.readyTimeout = d
		}
	}

	switch c.ImagePullPolicy {
	case "":
	case string(corev1.PullAlways), string(corev1.PullIfNotPresent), string(corev1.PullNever):
		s.pullPolicy = corev1.PullPolicy(c.ImagePullPolicy)
	default:
		oneOf("image_pull_policy", c.ImagePullPolicy, string(corev1.PullAlways), string(corev1.PullIfNotPresent), string(corev1.PullNever))
	}

	if c.FilesDir == "" {
		s.FilesDir = DefaultFilesDir
	} else if !path.IsAbs(c.FilesDir) || path.Clean(c.FilesDir) == "/" {
		bad("files_dir", "%q must be an absolute path other than \"/\"", c.FilesDir)
	} else {
		s.FilesDir = path.Clean(c.FilesDir)
	}

	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

// validateIngress is validate's part for the ingress attributes (and
// node_address, which expose also rules), reporting through bad.
func (c Config) validateIngress(s *settings, bad func(attr, format string, args ...any)) {
	ingressOnly := map[string]string{
		"ingress_class": c.IngressClass, "ingress_host": c.IngressHost,
		"ingress_path": c.IngressPath, "ingress_address": c.IngressAddress,
	}
	if s.Expose != ExposeIngress && c.IngressProcesses != nil {
		bad("ingress_processes", "only applies with expose = %q", ExposeIngress)
	}
	if c.IngressProcesses == nil {
		s.IngressProcesses = DefaultIngressProcesses
	}
	if s.Expose != ExposeIngress {
		var set []string
		for k, v := range ingressOnly {
			if v != "" {
				set = append(set, k)
			}
		}
		sort.Strings(set)
		for _, k := range set {
			bad(k, "only applies with expose = %q", ExposeIngress)
		}
	}
	if c.IngressClass != "" {
		for _, m := range validation.IsDNS1123Subdomain(c.IngressClass) {
			bad("ingress_class", "%q: %s", c.IngressClass, m)
		}
	}
	if c.IngressHost != "" {
		for _, m := range validation.IsDNS1123Subdomain(c.IngressHost) {
			bad("ingress_host", "%q: %s", c.IngressHost, m)
		}
	}
	if c.IngressPath == "" {
		s.IngressPath = DefaultIngressPath
	} else if !strings.HasPrefix(c.IngressPath, "/") {
		bad("ingress_path", "%q must start with \"/\"", c.IngressPath)
	}
	if c.IngressAddress != "" {
		if _, _, err := splitAddress(c.IngressAddress); err != nil {
			bad("ingress_address", "%v", err)
		}
	}
	if c.NodeAddress != "" && s.Expose != ExposeNodePort {
		bad("node_address", "only applies with expose = %q", ExposeNodePort)
	}
}

// validateResources is validate's part for replicas, cpu, memory and
// node_selector, reporting through bad.
func (c Config) validateResources(s *settings, bad func(attr, format string, args ...any)) {
	if c.Replicas < 0 {
		bad("replicas", "%d is negative", c.Replicas)
	}
	if c.CPU != "" {
		q, err := resource.ParseQuantity(c.CPU)
		if err != nil || q.Sign() <= 0 {
			bad("cpu", "%q is not a positive quantity such as \"2\" or \"500m\"", c.CPU)
		} else {
			s.cpu = &q
		}
	}
	if c.Memory != "" {
		q, err := resource.ParseQuantity(c.Memory)
		if err != nil || q.Sign() <= 0 {
			bad("memory", "%q is not a positive quantity such as \"256Mi\"", c.Memory)
		} else {
			s.memory = &q
		}
	}
	keys := make([]string, 0, len(c.NodeSelector))
	for k := range c.NodeSelector {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, m := range validation.IsQualifiedName(k) {
			bad("node_selector", "key %q: %s", k, m)
		}
		for _, m := range validation.IsValidLabelValue(c.NodeSelector[k]) {
			bad("node_selector", "value %q of %q: %s", c.NodeSelector[k], k, m)
		}
	}
}

// suggest is diag.Suggest ignoring case ("Ingress" → "ingress",
// "nodeprot" → "NodePort"), naming the option as it is spelled.
func suggest(given string, options []string) string {
	lower := make([]string, len(options))
	spelled := map[string]string{}
	for i, o := range options {
		lower[i] = strings.ToLower(o)
		spelled[lower[i]] = o
	}
	hint := diag.Suggest(strings.ToLower(given), lower)
	for l, o := range spelled {
		hint = strings.Replace(hint, strconv.Quote(l), strconv.Quote(o), 1)
	}
	return hint
}

// splitAddress parses "host:port" (the port is required).
func splitAddress(addr string) (string, int, error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%q is not host:port: %w", addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return "", 0, fmt.Errorf("%q: port %q is not a number in 1-65535", addr, p)
	}
	if h == "" {
		return "", 0, fmt.Errorf("%q: the host is empty", addr)
	}
	return h, n, nil
}
