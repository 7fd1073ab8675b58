package k8s

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/benchflow/benchflow/providers"
)

// cleanupTimeout bounds the teardown Provision runs itself after a failure.
const cleanupTimeout = 90 * time.Second

// podsGoneTimeout bounds how long Teardown waits for the pods to exit.
const podsGoneTimeout = gracePeriod*time.Second + 40*time.Second

// Deployment is one service provisioned on the cluster. Teardown deletes
// what Provision created in reverse order.
type Deployment struct {
	p      *Provider
	cs     *Client
	objs   *objects
	logf   func(format string, args ...any)
	logDir string // the trial's log folder, "" when none

	nsHeld   bool
	endpoint providers.Endpoint
	fwd      forwarder
	fwdLog   *forwardLog // what the port-forwarder reported
	ingress  string      // the ingress address from its status, host only

	once  sync.Once
	tdErr error

	aliveMu  sync.Mutex
	aliveAt  time.Time
	aliveErr error
}

// Provision creates the service's objects, waits for the rollout and opens
// the way in chosen by expose. On error (including a cancelled ctx) it
// deletes whatever it created before returning.
func (p *Provider) Provision(ctx context.Context, req *providers.ProvisionRequest) (providers.Deployment, error) {
	name := req.Service.Name
	o, err := p.cfg.build(req)
	if err != nil {
		return nil, fmt.Errorf("building the manifests of %q: %w", name, err)
	}
	// The benchflow process owning the objects, so gc leaves a live run alone.
	o.addLabels(providers.SelfOwner().Labels())
	cs, err := p.clientset()
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	logf := req.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	d := &Deployment{p: p, cs: cs, objs: o, logf: logf, logDir: req.LogDir}
	if err := d.provision(ctx); err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if terr := d.Teardown(cctx); terr != nil {
			err = errors.Join(err, fmt.Errorf("cleaning up: %w", terr))
		}
		return nil, fmt.Errorf("deploying %q to namespace %q: %w", name, o.ns, err)
	}
	return d, nil
}

func (d *Deployment) provision(ctx context.Context) error {
	o := d.objs
	if o.Namespace != nil {
		d.nsHeld = true
		if err := d.p.acquireNamespace(ctx, d.cs, o.Namespace); err != nil {
			return err
		}
	}
	api := &apiObjects{cs: d.cs, ns: o.ns}
	for _, obj := range o.list() {
		if obj == o.Namespace {
			continue
		}
		kind, name := kindName(obj)
		d.logf("k8s: creating %s %s/%s", kind, o.ns, name)
		if err := api.create(ctx, obj); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating %s %q: %w (left by an earlier run? `benchflow gc` removes leftovers)", kind, name, err)
			}
			return fmt.Errorf("creating %s %q: %w", kind, name, err)
		}
	}
	d.logf("k8s: waiting for %s/%s to be ready (up to %s)", o.ns, o.name, d.p.cfg.readyTimeout)
	if err := d.waitReady(ctx); err != nil {
		return err
	}
	return d.expose(ctx)
}

// Endpoint is where the service answers from the benchflow host.
func (d *Deployment) Endpoint() providers.Endpoint { return d.endpoint }

// Namespace is where the service's objects live.
func (d *Deployment) Namespace() string { return d.objs.ns }

// Teardown closes the port-forward, deletes the Ingress, Service,
// Deployment, pods and ConfigMap, waits (bounded) for the pods to exit and
// deletes the run's namespace once its last service is gone. It is safe
// after a partial Provision and runs once; later calls return the first
// result.
func (d *Deployment) Teardown(ctx context.Context) error {
	d.once.Do(func() { d.tdErr = d.teardown(ctx) })
	return d.tdErr
}

func (d *Deployment) teardown(ctx context.Context) error {
	o := d.objs
	var errs []error
	if d.fwd != nil {
		d.fwd.Close()
	}
	if d.fwdLog != nil {
		if s := d.fwdLog.close(); s != "" {
			d.logf("k8s: %s", s)
		}
	}
	api := &apiObjects{cs: d.cs, ns: o.ns}
	objs := o.list()
	for i := len(objs) - 1; i >= 0; i-- {
		obj := objs[i]
		if obj == o.Namespace {
			continue
		}
		kind, name := kindName(obj)
		d.logf("k8s: deleting %s %s/%s", kind, o.ns, name)
		if err := api.delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s %q: %w", kind, name, err))
		}
		if obj == o.Deployment {
			if err := d.deletePods(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if d.nsHeld {
		if err := d.p.releaseNamespace(ctx, d.cs, o.ns); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("tearing down %q in namespace %q: %w", o.name, o.ns, err)
	}
	return nil
}

// deletePods deletes the trial's pods (the Deployment's garbage collection
// would too, later) and waits for them to be gone, so the next trial does
// not share the node with exiting pods.
func (d *Deployment) deletePods(ctx context.Context) error {
	sel := metav1.ListOptions{LabelSelector: selectorString(d.objs.selector)}
	pods := d.cs.Pods(d.objs.ns)
	list, err := pods.List(ctx, sel)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("listing pods: %w", err)
	}
	var errs []error
	for _, pod := range list.Items {
		if err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting pod %q: %w", pod.Name, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// Wait until the API server no longer has them: the kubelet has stopped
	// their containers and released their IPs and ports.
	limit := d.p.podsGone
	if limit == 0 {
		limit = podsGoneTimeout
	}
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var left []corev1.Pod // as last seen
	for {
		list, err := pods.List(wctx, sel)
		if err == nil && len(list.Items) == 0 {
			return nil
		}
		if err == nil {
			left = list.Items
			// A pod the ReplicaSet started after the first list: delete it too.
			for _, pod := range list.Items {
				if pod.DeletionTimestamp == nil {
					_ = pods.Delete(wctx, pod.Name, metav1.DeleteOptions{})
				}
			}
		}
		select {
		case <-wctx.Done():
			if len(left) == 0 && err != nil {
				return fmt.Errorf("waiting for the pods of %q to be gone: %w", d.objs.name, err)
			}
			var names []string
			for _, p := range left {
				s := p.Name + " (" + string(p.Status.Phase)
				if p.DeletionTimestamp != nil {
					s += ", terminating"
				}
				if p.Spec.NodeName != "" {
					s += ", node " + p.Spec.NodeName
				}
				names = append(names, s+")")
			}
			return fmt.Errorf("pods of %q still exist %s after they were deleted: %s (the node may be slow to stop them; check `kubectl -n %s get pods`)",
				d.objs.name, time.Since(start).Round(time.Second), strings.Join(names, ", "), d.objs.ns)
		case <-time.After(d.p.pollInterval):
		}
	}
}

// Namespaces per run are shared by the services of a trial; the last one
// torn down deletes it. The count is per process and per cluster.
var nsUsers = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

// acquireNamespace makes sure the run's namespace exists and counts one
// more user of it. A namespace still terminating from the previous trial is
// waited for (bounded by ready_timeout) and created again.
func (p *Provider) acquireNamespace(ctx context.Context, cs *Client, ns *corev1.Namespace) error {
	nsUsers.Lock()
	nsUsers.n[p.key+"/"+ns.Name]++
	nsUsers.Unlock()

	ctx, cancel := context.WithTimeout(ctx, p.cfg.readyTimeout)
	defer cancel()
	for {
		_, err := cs.Namespaces().Create(ctx, ns.DeepCopy(), metav1.CreateOptions{})
		if err == nil || !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return fmt.Errorf("creating namespace %q: %w", ns.Name, err)
			}
			return nil
		}
		cur, err := cs.Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue // deleted in between: create it again
		case err != nil:
			return fmt.Errorf("reading namespace %q: %w", ns.Name, err)
		case cur.DeletionTimestamp == nil && cur.Status.Phase != corev1.NamespaceTerminating:
			return nil // another service of the run made it
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for namespace %q to finish terminating: %w", ns.Name, ctx.Err())
		case <-time.After(p.pollInterval):
		}
	}
}

// releaseNamespace counts one user less and deletes the namespace when it
// was the last. It does not wait for the deletion to finish.
func (p *Provider) releaseNamespace(ctx context.Context, cs *Client, ns string) error {
	key := p.key + "/" + ns
	nsUsers.Lock()
	nsUsers.n[key]--
	last := nsUsers.n[key] <= 0
	if last {
		delete(nsUsers.n, key)
	}
	nsUsers.Unlock()
	if !last {
		return nil
	}
	bg := metav1.DeletePropagationBackground
	err := cs.Namespaces().Delete(ctx, ns, metav1.DeleteOptions{PropagationPolicy: &bg})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting namespace %q: %w", ns, err)
	}
	return nil
}

// nodeAddress picks the address of a Ready node: InternalIP, else
// ExternalIP, else the node's hostname.
func nodeAddress(ctx context.Context, cs *Client) (string, error) {
	nodes, err := cs.Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("listing nodes (set node_address to skip this): %w", err)
	}
	items := nodes.Items
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	for _, pass := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName} {
		for _, n := range items {
			if !nodeReady(&n) {
				continue
			}
			for _, a := range n.Status.Addresses {
				if a.Type == pass && a.Address != "" {
					return a.Address, nil
				}
			}
		}
	}
	return "", errors.New("no Ready node has an address (set node_address)")
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
