package k8s

import (
	"context"
	"net/url"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// clientFor is a Client over a client-go clientset: the tests give the
// provider client-go's fake clientset (and its simulated controllers) this
// way, and compare NewClient's requests with the full clientset's.
func clientFor(cs kubernetes.Interface) *Client {
	return &Client{
		Namespaces: func() Resource[*corev1.Namespace, *corev1.NamespaceList] { return cs.CoreV1().Namespaces() },
		Nodes:      func() Resource[*corev1.Node, *corev1.NodeList] { return cs.CoreV1().Nodes() },
		Pods:       func(ns string) Resource[*corev1.Pod, *corev1.PodList] { return cs.CoreV1().Pods(ns) },
		ConfigMaps: func(ns string) Resource[*corev1.ConfigMap, *corev1.ConfigMapList] {
			return cs.CoreV1().ConfigMaps(ns)
		},
		Secrets:  func(ns string) Resource[*corev1.Secret, *corev1.SecretList] { return cs.CoreV1().Secrets(ns) },
		Services: func(ns string) Resource[*corev1.Service, *corev1.ServiceList] { return cs.CoreV1().Services(ns) },
		Events:   func(ns string) Resource[*corev1.Event, *corev1.EventList] { return cs.CoreV1().Events(ns) },
		Deployments: func(ns string) Resource[*appsv1.Deployment, *appsv1.DeploymentList] {
			return cs.AppsV1().Deployments(ns)
		},
		Ingresses: func(ns string) Resource[*networkingv1.Ingress, *networkingv1.IngressList] {
			return cs.NetworkingV1().Ingresses(ns)
		},
		EndpointSlices: func(ns string) Resource[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList] {
			return cs.DiscoveryV1().EndpointSlices(ns)
		},
		PodLogs: func(ns, pod string, opts *corev1.PodLogOptions) *rest.Request {
			return cs.CoreV1().Pods(ns).GetLogs(pod, opts)
		},
		PortForwardURL: func(ns, pod string) *url.URL {
			return cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("portforward").URL()
		},
		ServerVersion: func(ctx context.Context) (*version.Info, error) { return cs.Discovery().ServerVersion() },
	}
}
