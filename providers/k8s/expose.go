package k8s

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/klog/v2"
	streamhttp "k8s.io/streaming/pkg/httpstream"

	"github.com/benchflow/benchflow/providers"
)

// expose fills the endpoint according to cfg.Expose, once the rollout is
// ready.
func (d *Deployment) expose(ctx context.Context) error {
	o, cfg := d.objs, d.p.cfg
	ep := providers.Endpoint{
		Scheme: "http",
		Ports:  map[string]int{},
		Attrs: map[string]string{
			"namespace":  o.ns,
			"deployment": o.Deployment.Name,
			"expose":     cfg.Expose,
		},
	}
	primary := o.ports[0]
	ep.Attrs["cluster_url"] = d.clusterURL(ctx, primary.Container)
	switch cfg.Expose {
	case ExposePortForward:
		pod, err := d.readyPod(ctx)
		if err != nil {
			return err
		}
		specs := make([]string, len(o.ports))
		for i, p := range o.ports {
			specs[i] = fmt.Sprintf("%d:%d", p.Local, p.Container)
		}
		fw := d.p.forward
		if fw == nil {
			fw = d.p.portForward
		}
		d.fwdLog = newForwardLog(d.logDir, o.name)
		// client-go's forwarder logs through the klog logger of its context.
		f, err := fw(klog.NewContext(ctx, d.fwdLog.logger()), o.ns, pod, specs)
		if err != nil {
			return fmt.Errorf("port-forwarding to pod %q: %w", pod, err)
		}
		d.fwd = f
		local := f.Ports()
		for _, p := range o.ports {
			ep.Ports[p.Name] = local[int(p.Container)]
		}
		ep.Host = "127.0.0.1"
		ep.Port = ep.Ports[primary.Name]
		ep.Attrs["pod"] = pod
		d.logf("k8s: port-forward 127.0.0.1:%d -> %s/%s:%d", ep.Port, o.ns, pod, primary.Container)

	case ExposeNodePort:
		svc, err := d.cs.Services(o.ns).Get(ctx, o.Service.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading Service %q: %w", o.Service.Name, err)
		}
		for _, p := range o.ports {
			for _, sp := range svc.Spec.Ports {
				if sp.Name == p.KubeName {
					ep.Ports[p.Name] = int(sp.NodePort)
				}
			}
			if ep.Ports[p.Name] == 0 {
				return fmt.Errorf("service %q: port %q has no node port", o.Service.Name, p.KubeName)
			}
		}
		host := cfg.NodeAddress
		if host == "" {
			if host, err = nodeAddress(ctx, d.cs); err != nil {
				return err
			}
		}
		ep.Host = host
		ep.Port = ep.Ports[primary.Name]

	case ExposeIngress:
		host, port := d.ingress, 80
		if cfg.IngressAddress != "" {
			host, port, _ = splitAddress(cfg.IngressAddress) // validated in New
		}
		ep.Host = host
		ep.Port = port
		ep.Ports[primary.Name] = port
		ep.Attrs["ingress"] = o.Ingress.Name
		ep.Attrs["host_header"] = hostHeader(host, port)
		if cfg.IngressHost != "" {
			ep.Attrs["host_header"] = cfg.IngressHost
			if d.p.resolvesTo(ctx, cfg.IngressHost, host) {
				ep.Host = cfg.IngressHost
			}
		}
		ep.Attrs["path"] = cfg.IngressPath
	}
	if ep.Attrs["host_header"] == "" {
		ep.Attrs["host_header"] = hostHeader(ep.Host, ep.Port)
	}
	d.endpoint = ep
	return nil
}

// hostHeader is what a client sends as Host for host:port.
func hostHeader(host string, port int) string {
	if port == 80 {
		if strings.Contains(host, ":") {
			return "[" + host + "]"
		}
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// resolvesTo reports whether name resolves (within two seconds) to an
// address that addr (an IP or a host name) also resolves to, so a URL with
// name reaches the same ingress controller as one with addr.
func (p *Provider) resolvesTo(ctx context.Context, name, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	got, err := p.lookupHost(ctx, name)
	if err != nil || len(got) == 0 {
		return false
	}
	want := []string{addr}
	if net.ParseIP(addr) == nil {
		if want, err = p.lookupHost(ctx, addr); err != nil {
			return false
		}
	}
	for _, g := range got {
		gip := net.ParseIP(g)
		for _, w := range want {
			if wip := net.ParseIP(w); gip != nil && wip != nil && gip.Equal(wip) {
				return true
			}
		}
	}
	return false
}

// readyPod picks the first Ready pod of the service.
func (d *Deployment) readyPod(ctx context.Context) (string, error) {
	pods, err := d.pods(ctx)
	if err != nil {
		return "", err
	}
	for i := range pods {
		if podReady(&pods[i]) {
			return pods[i].Name, nil
		}
	}
	return "", fmt.Errorf("no Ready pod of %q to port-forward to", d.objs.name)
}

// forwarder is an open port-forward.
type forwarder interface {
	// Ports maps each remote (container) port to its local port.
	Ports() map[int]int
	// Close stops forwarding and waits for it to end.
	Close()
}

// forwardFunc opens a port-forward to a pod; specs are "local:remote"
// (local 0 = any free port), listening on 127.0.0.1.
type forwardFunc func(ctx context.Context, ns, pod string, specs []string) (forwarder, error)

// portForward opens a port-forward with client-go, as kubectl does:
// WebSocket first, SPDY when the server does not upgrade.
func (p *Provider) portForward(ctx context.Context, ns, pod string, specs []string) (forwarder, error) {
	p.mu.Lock()
	rc, cs := p.rest, p.client
	p.mu.Unlock()
	if rc == nil {
		return nil, errors.New("port-forward needs a REST config; this provider was built around a given clientset")
	}
	return openForward(ctx, rc, cs, ns, pod, specs)
}

func openForward(ctx context.Context, rc *rest.Config, cs *Client, ns, pod string, specs []string) (forwarder, error) {
	u := cs.PortForwardURL(ns, pod)
	transport, upgrader, err := spdy.RoundTripperFor(rc)
	if err != nil {
		return nil, fmt.Errorf("building the SPDY transport: %w", err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	if ws, err := portforward.NewSPDYOverWebsocketDialer(u, rc); err == nil {
		dialer = portforward.NewFallbackDialer(ws, dialer, func(err error) bool {
			// client-go reports these with k8s.io/streaming's error types;
			// apimachinery's are checked too for older transports.
			return streamhttp.IsUpgradeFailure(err) || streamhttp.IsHTTPSProxyError(err) ||
				httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
	}
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ready := make(chan struct{})
	errOut := &lockedBuffer{}
	pf, err := portforward.NewOnAddressesWithContext(fctx, dialer, []string{"127.0.0.1"}, specs, ready, io.Discard, errOut)
	if err != nil {
		cancel()
		return nil, err
	}
	f := &clientForward{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		f.err = pf.ForwardPorts()
	}()
	select {
	case <-ready:
	case <-f.done:
		cancel()
		err := f.err
		if err == nil {
			err = errors.New("the port-forward ended before it was ready")
		}
		if msg := strings.TrimSpace(errOut.String()); msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return nil, err
	case <-ctx.Done():
		f.Close()
		return nil, ctx.Err()
	}
	got, err := pf.GetPorts()
	if err != nil {
		f.Close()
		return nil, err
	}
	f.ports = map[int]int{}
	for _, fp := range got {
		f.ports[int(fp.Remote)] = int(fp.Local)
	}
	return f, nil
}

type clientForward struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	ports  map[int]int
}

func (f *clientForward) Ports() map[int]int { return f.ports }

func (f *clientForward) Close() {
	f.cancel()
	<-f.done
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// clusterURL is the Service's address inside the cluster: its cluster IP
// (which needs no cluster DNS), or its DNS name when it has none.
func (d *Deployment) clusterURL(ctx context.Context, port int32) string {
	o := d.objs
	if svc, err := d.cs.Services(o.ns).Get(ctx, o.Service.Name, metav1.GetOptions{}); err == nil {
		if ip := svc.Spec.ClusterIP; ip != "" && ip != corev1.ClusterIPNone {
			return fmt.Sprintf("http://%s", net.JoinHostPort(ip, strconv.Itoa(int(port))))
		}
	}
	return fmt.Sprintf("http://%s.%s.svc:%d", o.Service.Name, o.ns, port)
}
