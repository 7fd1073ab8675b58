package k8s

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Resource is what the provider does with one kind of object: the verbs of
// client-go's typed clients it uses. client-go's typed clients (and those of
// its fake clientset) satisfy it.
type Resource[T, L runtime.Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// Client is the part of the Kubernetes API the provider uses: the objects it
// creates, watches and deletes in four API groups (core, apps, networking,
// discovery), pod logs, the port-forward URL and the server's version.
//
// It stands in for client-go's full clientset, whose scheme registers every
// API group and took a fifth of the binary: NewClient builds it from a REST
// config with a scheme of the four groups alone. Each field takes a
// namespace ("" for all namespaces) where the kind is namespaced; tests fill
// the fields from client-go's fake clientset.
type Client struct {
	Namespaces     func() Resource[*corev1.Namespace, *corev1.NamespaceList]
	Nodes          func() Resource[*corev1.Node, *corev1.NodeList]
	Pods           func(ns string) Resource[*corev1.Pod, *corev1.PodList]
	ConfigMaps     func(ns string) Resource[*corev1.ConfigMap, *corev1.ConfigMapList]
	Secrets        func(ns string) Resource[*corev1.Secret, *corev1.SecretList]
	Services       func(ns string) Resource[*corev1.Service, *corev1.ServiceList]
	Events         func(ns string) Resource[*corev1.Event, *corev1.EventList]
	Deployments    func(ns string) Resource[*appsv1.Deployment, *appsv1.DeploymentList]
	Ingresses      func(ns string) Resource[*networkingv1.Ingress, *networkingv1.IngressList]
	EndpointSlices func(ns string) Resource[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList]

	// PodLogs is the request for a container's log (GET
	// /api/v1/namespaces/<ns>/pods/<pod>/log).
	PodLogs func(ns, pod string, opts *corev1.PodLogOptions) *rest.Request
	// PortForwardURL is the address a port-forward to pod is opened at.
	PortForwardURL func(ns, pod string) *url.URL
	// ServerVersion is the API server's /version.
	ServerVersion func(ctx context.Context) (*version.Info, error)
}

// NewClient builds a Client for the cluster rc points at. Like
// kubernetes.NewForConfig, every group shares one HTTP client (and one rate
// limiter when rc sets a QPS), objects travel as protobuf where the API
// server offers it, and the user agent defaults to client-go's.
func NewClient(rc *rest.Config) (*Client, error) {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, networkingv1.AddToScheme, discoveryv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("registering the API types: %w", err)
		}
	}
	codecs := serializer.NewCodecFactory(s)
	params := runtime.NewParameterCodec(s)

	base := *rc
	if base.UserAgent == "" {
		base.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if base.RateLimiter == nil && base.QPS > 0 {
		if base.Burst <= 0 {
			return nil, fmt.Errorf("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")
		}
		base.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(base.QPS, base.Burst)
	}
	httpClient, err := rest.HTTPClientFor(&base)
	if err != nil {
		return nil, err
	}
	group := func(gv schema.GroupVersion, apiPath string) (*rest.RESTClient, error) {
		c := base
		c.GroupVersion = &gv
		c.APIPath = apiPath
		c.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(s, codecs).WithoutConversion()
		return rest.RESTClientForConfigAndClient(&c, httpClient)
	}
	core, err := group(corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, err
	}
	apps, err := group(appsv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	networking, err := group(networkingv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	disc, err := group(discoveryv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	return &Client{
		Namespaces: func() Resource[*corev1.Namespace, *corev1.NamespaceList] {
			return typed(core, params, "namespaces", "", func() *corev1.Namespace { return &corev1.Namespace{} }, func() *corev1.NamespaceList { return &corev1.NamespaceList{} })
		},
		Nodes: func() Resource[*corev1.Node, *corev1.NodeList] {
			return typed(core, params, "nodes", "", func() *corev1.Node { return &corev1.Node{} }, func() *corev1.NodeList { return &corev1.NodeList{} })
		},
		Pods: func(ns string) Resource[*corev1.Pod, *corev1.PodList] {
			return typed(core, params, "pods", ns, func() *corev1.Pod { return &corev1.Pod{} }, func() *corev1.PodList { return &corev1.PodList{} })
		},
		ConfigMaps: func(ns string) Resource[*corev1.ConfigMap, *corev1.ConfigMapList] {
			return typed(core, params, "configmaps", ns, func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} })
		},
		Secrets: func(ns string) Resource[*corev1.Secret, *corev1.SecretList] {
			return typed(core, params, "secrets", ns, func() *corev1.Secret { return &corev1.Secret{} }, func() *corev1.SecretList { return &corev1.SecretList{} })
		},
		Services: func(ns string) Resource[*corev1.Service, *corev1.ServiceList] {
			return typed(core, params, "services", ns, func() *corev1.Service { return &corev1.Service{} }, func() *corev1.ServiceList { return &corev1.ServiceList{} })
		},
		Events: func(ns string) Resource[*corev1.Event, *corev1.EventList] {
			return typed(core, params, "events", ns, func() *corev1.Event { return &corev1.Event{} }, func() *corev1.EventList { return &corev1.EventList{} })
		},
		Deployments: func(ns string) Resource[*appsv1.Deployment, *appsv1.DeploymentList] {
			return typed(apps, params, "deployments", ns, func() *appsv1.Deployment { return &appsv1.Deployment{} }, func() *appsv1.DeploymentList { return &appsv1.DeploymentList{} })
		},
		Ingresses: func(ns string) Resource[*networkingv1.Ingress, *networkingv1.IngressList] {
			return typed(networking, params, "ingresses", ns, func() *networkingv1.Ingress { return &networkingv1.Ingress{} }, func() *networkingv1.IngressList { return &networkingv1.IngressList{} })
		},
		EndpointSlices: func(ns string) Resource[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList] {
			return typed(disc, params, "endpointslices", ns, func() *discoveryv1.EndpointSlice { return &discoveryv1.EndpointSlice{} }, func() *discoveryv1.EndpointSliceList { return &discoveryv1.EndpointSliceList{} })
		},
		PodLogs: func(ns, pod string, opts *corev1.PodLogOptions) *rest.Request {
			return core.Get().Namespace(ns).Name(pod).Resource("pods").SubResource("log").VersionedParams(opts, params)
		},
		PortForwardURL: func(ns, pod string) *url.URL {
			return core.Post().Resource("pods").Namespace(ns).Name(pod).SubResource("portforward").URL()
		},
		ServerVersion: func(ctx context.Context) (*version.Info, error) {
			body, err := core.Get().AbsPath("/version").Do(ctx).Raw()
			if err != nil {
				return nil, err
			}
			var info version.Info
			if err := json.Unmarshal(body, &info); err != nil {
				return nil, fmt.Errorf("unable to parse the server version: %v", err)
			}
			return &info, nil
		},
	}, nil
}

// typed is the client of one resource in namespace ns ("" for all, or for
// a cluster-scoped kind).
func typed[T, L runtime.Object](c rest.Interface, params runtime.ParameterCodec, resource, ns string, newT func() T, newL func() L) Resource[T, L] {
	return &restResource[T, L]{c: c, params: params, resource: resource, ns: ns, newT: newT, newL: newL}
}

// restResource is a Resource over a REST client. Its requests are those of
// client-go's generated typed clients (gentype.Client, which would link
// client-go's testing package and its dependencies): protobuf where the
// server offers it, options as query parameters, DeleteOptions as the body.
type restResource[T, L runtime.Object] struct {
	c        rest.Interface
	params   runtime.ParameterCodec
	resource string
	ns       string
	newT     func() T
	newL     func() L
}

func (r *restResource[T, L]) req(verb *rest.Request) *rest.Request {
	return verb.UseProtobufAsDefaultIfPreferred(true).NamespaceIfScoped(r.ns, r.ns != "").Resource(r.resource)
}

func (r *restResource[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	out := r.newT()
	err := r.req(r.c.Post()).VersionedParams(&opts, r.params).Body(obj).Do(ctx).Into(out)
	return out, err
}

func (r *restResource[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	out := r.newT()
	err := r.req(r.c.Get()).Name(name).VersionedParams(&opts, r.params).Do(ctx).Into(out)
	return out, err
}

func (r *restResource[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	out := r.newL()
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	err := r.req(r.c.Get()).VersionedParams(&opts, r.params).Timeout(timeout).Do(ctx).Into(out)
	return out, err
}

func (r *restResource[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.req(r.c.Delete()).Name(name).Body(&opts).Do(ctx).Error()
}
