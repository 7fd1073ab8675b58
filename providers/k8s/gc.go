package k8s

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/benchflow/benchflow/providers"
)

// GC deletes what crashed runs left on the cluster of the default
// kubeconfig ($KUBECONFIG or ~/.kube/config, current context): every
// namespace, Ingress, Service, Deployment, ConfigMap and pod labelled
// dev.benchflow.managed=true (and dev.benchflow.run=runID when runID is
// not empty). It returns one line per deleted object. Without a kubeconfig
// or a reachable API server the error wraps providers.ErrUnavailable.
func GC(ctx context.Context, req *providers.GCRequest) ([]string, error) {
	runID := req.RunID
	rc, err := restConfig("", "", false)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("building a Kubernetes client: %w", err)
	}
	return gc(ctx, cs, runID)
}

// gc is GC with a given clientset.
func gc(ctx context.Context, cs kubernetes.Interface, runID string) ([]string, error) {
	sel := providers.LabelManaged + "=true"
	if runID != "" {
		sel += "," + providers.LabelRun + "=" + labelValue(runID)
	}
	opts := metav1.ListOptions{LabelSelector: sel}
	var removed []string
	var errs []error
	// gone holds the namespaces deleted here: their contents go with them.
	gone := map[string]bool{}
	del := func(kind, ns, name string, fn func() error) {
		if gone[ns] {
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

	nss, err := cs.CoreV1().Namespaces().List(ctx, opts)
	if err != nil {
		return nil, listError("namespaces", err)
	}
	for _, n := range nss.Items {
		if n.DeletionTimestamp != nil {
			continue
		}
		if err := cs.CoreV1().Namespaces().Delete(ctx, n.Name, dopts); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting namespace %s: %w", n.Name, err))
			continue
		}
		gone[n.Name] = true
		removed = append(removed, "k8s namespace "+n.Name)
	}

	if ings, err := cs.NetworkingV1().Ingresses("").List(ctx, opts); err != nil {
		errs = append(errs, listError("ingresses", err))
	} else {
		for _, x := range ings.Items {
			del("ingress", x.Namespace, x.Name, func() error {
				return cs.NetworkingV1().Ingresses(x.Namespace).Delete(ctx, x.Name, dopts)
			})
		}
	}
	if svcs, err := cs.CoreV1().Services("").List(ctx, opts); err != nil {
		errs = append(errs, listError("services", err))
	} else {
		for _, x := range svcs.Items {
			del("service", x.Namespace, x.Name, func() error {
				return cs.CoreV1().Services(x.Namespace).Delete(ctx, x.Name, dopts)
			})
		}
	}
	if deps, err := cs.AppsV1().Deployments("").List(ctx, opts); err != nil {
		errs = append(errs, listError("deployments", err))
	} else {
		for _, x := range deps.Items {
			del("deployment", x.Namespace, x.Name, func() error {
				return cs.AppsV1().Deployments(x.Namespace).Delete(ctx, x.Name, dopts)
			})
		}
	}
	if pods, err := cs.CoreV1().Pods("").List(ctx, opts); err != nil {
		errs = append(errs, listError("pods", err))
	} else {
		for _, x := range pods.Items {
			if x.DeletionTimestamp != nil {
				continue
			}
			del("pod", x.Namespace, x.Name, func() error {
				return cs.CoreV1().Pods(x.Namespace).Delete(ctx, x.Name, dopts)
			})
		}
	}
	if cms, err := cs.CoreV1().ConfigMaps("").List(ctx, opts); err != nil {
		errs = append(errs, listError("configmaps", err))
	} else {
		for _, x := range cms.Items {
			del("configmap", x.Namespace, x.Name, func() error {
				return cs.CoreV1().ConfigMaps(x.Namespace).Delete(ctx, x.Name, dopts)
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
