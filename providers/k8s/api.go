package k8s

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// apiObjects creates and deletes the typed objects of one namespace.
type apiObjects struct {
	cs *Client
	ns string
}

func (a *apiObjects) create(ctx context.Context, obj runtime.Object) error {
	opts := metav1.CreateOptions{}
	var err error
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		_, err = a.cs.ConfigMaps(a.ns).Create(ctx, o.DeepCopy(), opts)
	case *appsv1.Deployment:
		_, err = a.cs.Deployments(a.ns).Create(ctx, o.DeepCopy(), opts)
	case *corev1.Service:
		_, err = a.cs.Services(a.ns).Create(ctx, o.DeepCopy(), opts)
	case *networkingv1.Ingress:
		_, err = a.cs.Ingresses(a.ns).Create(ctx, o.DeepCopy(), opts)
	default:
		err = fmt.Errorf("cannot create a %T", obj)
	}
	return err
}

// delete removes obj; a Deployment is deleted in the foreground so its
// ReplicaSets and pods go with it.
func (a *apiObjects) delete(ctx context.Context, obj runtime.Object) error {
	fg := metav1.DeletePropagationForeground
	opts := metav1.DeleteOptions{}
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		return a.cs.ConfigMaps(a.ns).Delete(ctx, o.Name, opts)
	case *appsv1.Deployment:
		opts.PropagationPolicy = &fg
		return a.cs.Deployments(a.ns).Delete(ctx, o.Name, opts)
	case *corev1.Service:
		return a.cs.Services(a.ns).Delete(ctx, o.Name, opts)
	case *networkingv1.Ingress:
		return a.cs.Ingresses(a.ns).Delete(ctx, o.Name, opts)
	}
	return fmt.Errorf("cannot delete a %T", obj)
}

// kindName names an object for messages: ("Deployment", "web").
func kindName(obj runtime.Object) (string, string) {
	switch o := obj.(type) {
	case *corev1.Namespace:
		return "Namespace", o.Name
	case *corev1.ConfigMap:
		return "ConfigMap", o.Name
	case *appsv1.Deployment:
		return "Deployment", o.Name
	case *corev1.Service:
		return "Service", o.Name
	case *networkingv1.Ingress:
		return "Ingress", o.Name
	}
	return fmt.Sprintf("%T", obj), ""
}
