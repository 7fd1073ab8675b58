package k8s

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/benchflow/benchflow/providers"
)

// GC deletes what crashed runs left on the clusters the pipeline's k8s
// provider blocks use (req.Configs: their kubeconfig, context and
// in_cluster), or on the cluster of the default kubeconfig ($KUBECONFIG or
// ~/.kube/config, current context) without a pipeline: every namespace,
// Ingress, Service, Deployment, ConfigMap and pod labelled
// dev.benchflow.managed=true (and dev.benchflow.run=req.RunID when that is
// not empty) that providers.GCDecision lets go — without a run id, objects
// whose benchflow process still runs, or ran on another host, are kept and
// reported through req.Keep. It returns one line per deleted object.
// Without a kubeconfig or a reachable API server the error wraps
// providers.ErrUnavailable.
func GC(ctx context.Context, req *providers.GCRequest) ([]string, error) {
	targets := gcTargets(req)
	var removed []string
	var errs []error
	seen := map[string]bool{}
	for _, c := range targets {
		rc, err := restConfig(c.Kubeconfig, c.Context, c.InCluster)
		if err == nil && seen[rc.Host] {
			continue
		}
		var cs *Client
		if err == nil {
			seen[rc.Host] = true
			if cs, err = NewClient(rc); err != nil {
				err = fmt.Errorf("building a Kubernetes client: %w", err)
			}
		}
		if err == nil {
			var r []string
			r, err = gc(ctx, cs, req)
			removed = append(removed, r...)
		}
		if err != nil {
			if len(targets) > 1 {
				err = fmt.Errorf("%s: %w", c.describe(), err)
			}
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// gcTargets are the distinct connection settings of the pipeline's k8s
// provider blocks, or the defaults.
func gcTargets(req *providers.GCRequest) []Config {
	type key struct {
		kubeconfig, context string
		inCluster           bool
	}
	var out []Config
	have := map[key]bool{}
	for _, c := range providers.ConfigsOf[Config](req.Configs) {
		cfg := *c
		k := key{cfg.Kubeconfig, cfg.Context, cfg.InCluster}
		if !have[k] {
			have[k] = true
			out = append(out, Config{Kubeconfig: cfg.Kubeconfig, Context: cfg.Context, InCluster: cfg.InCluster})
		}
	}
	if len(out) == 0 {
		out = append(out, Config{})
	}
	return out
}

// describe names a cluster target in messages.
func (c Config) describe() string {
	switch {
	case c.InCluster:
		return "in-cluster config"
	case c.Kubeconfig != "" && c.Context != "":
		return fmt.Sprintf("kubeconfig %s, context %s", c.Kubeconfig, c.Context)
	case c.Kubeconfig != "":
		return "kubeconfig " + c.Kubeconfig
	case c.Context != "":
		return "context " + c.Context
	}
	return "the default kubeconfig"
}

// gc is GC on one cluster, with a given clientset.
func gc(ctx context.Context, cs *Client, req *providers.GCRequest) ([]string, error) {
	if req == nil {
		req = &providers.GCRequest{}
	}
	runID := req.RunID
	sel := providers.LabelManaged + "=true"
	if runID != "" {
		sel += "," + providers.LabelRun + "=" + labelValue(runID)
	}
	opts := metav1.ListOptions{LabelSelector: sel}
	var removed []string
	var errs []error
	// gone holds the namespaces deleted here: their contents go with them;
	// kept holds those left alone: so do their contents.
	gone := map[string]bool{}
	kept := map[string]bool{}
	del := func(kind string, m metav1.ObjectMeta, fn func() error) {
		ns, name := m.Namespace, m.Name
		if gone[ns] || kept[ns] {
			return
		}
		if ok, why := providers.GCDecision(m.Labels, runID); !ok {
			req.Keep(fmt.Sprintf("k8s %s %s/%s", kind, ns, name), why)
			return
		}
		if err := fn(); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s %s/%s: %w", kind, ns, name, err))
			return
		}
		removed = append(removed, fmt.Sprintf("k8s %s %s/%s", kind, ns, name))
	}
	bg := metav1.DeletePropagationBackground
	dopts := metav1.DeleteOptions{PropagationPolicy: &bg}

	nss, err := cs.Namespaces().List(ctx, opts)
	if err != nil {
		return nil, listError("namespaces", err)
	}
	for _, n := range nss.Items {
		if n.DeletionTimestamp != nil {
			continue
		}
		if ok, why := providers.GCDecision(n.Labels, runID); !ok {
			kept[n.Name] = true
			req.Keep("k8s namespace "+n.Name, why)
			continue
		}
		if err := cs.Namespaces().Delete(ctx, n.Name, dopts); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting namespace %s: %w", n.Name, err))
			continue
		}
		gone[n.Name] = true
		removed = append(removed, "k8s namespace "+n.Name)
	}

	if ings, err := cs.Ingresses("").List(ctx, opts); err != nil {
		errs = append(errs, listError("ingresses", err))
	} else {
		for _, x := range ings.Items {
			del("ingress", x.ObjectMeta, func() error {
				return cs.Ingresses(x.Namespace).Delete(ctx, x.Name, dopts)
			})
		}
	}
	if svcs, err := cs.Services("").List(ctx, opts); err != nil {
		errs = append(errs, listError("services", err))
	} else {
		for _, x := range svcs.Items {
			del("service", x.ObjectMeta, func() error {
				return cs.Services(x.Namespace).Delete(ctx, x.Name, dopts)
			})
		}
	}
	if deps, err := cs.Deployments("").List(ctx, opts); err != nil {
		errs = append(errs, listError("deployments", err))
	} else {
		for _, x := range deps.Items {
			del("deployment", x.ObjectMeta, func() error {
				return cs.Deployments(x.Namespace).Delete(ctx, x.Name, dopts)
			})
		}
	}
	if pods, err := cs.Pods("").List(ctx, opts); err != nil {
		errs = append(errs, listError("pods", err))
	} else {
		for _, x := range pods.Items {
			if x.DeletionTimestamp != nil {
				continue
			}
			del("pod", x.ObjectMeta, func() error {
				return cs.Pods(x.Namespace).Delete(ctx, x.Name, dopts)
			})
		}
	}
	if cms, err := cs.ConfigMaps("").List(ctx, opts); err != nil {
		errs = append(errs, listError("configmaps", err))
	} else {
		for _, x := range cms.Items {
			del("configmap", x.ObjectMeta, func() error {
				return cs.ConfigMaps(x.Namespace).Delete(ctx, x.Name, dopts)
			})
		}
	}
	if secs, err := cs.Secrets("").List(ctx, opts); err != nil {
		errs = append(errs, listError("secrets", err))
	} else {
		for _, x := range secs.Items {
			del("secret", x.ObjectMeta, func() error {
				return cs.Secrets(x.Namespace).Delete(ctx, x.Name, dopts)
			})
		}
	}
	return removed, errors.Join(errs...)
}

// listError wraps a failed list; an error that is not an API status (a
// refused connection, DNS, TLS) means the cluster cannot be reached.
func listError(what string, err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return fmt.Errorf("listing %s: %w", what, err)
	}
	return fmt.Errorf("listing %s: %w: %w", what, providers.ErrUnavailable, err)
}
