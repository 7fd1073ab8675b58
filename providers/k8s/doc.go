// Package k8s is the Kubernetes provider: it deploys a service as a
// ConfigMap (the service's files), a Deployment and a Service, plus an
// Ingress (networking.k8s.io/v1) with expose = "ingress", and tears them
// down in reverse order.
//
// Entry points:
//   - Type, the "k8s" provider type, registered in init (Config is the
//     body of a `provider "k8s" "<name>" {}` block, decoded by the engine
//     and checked by Config.Validate, whose errors name the attribute);
//   - New and NewWithClient (a given Client: the typed resources of the
//     four API groups the provider uses, see client.go; tests fill one
//     from client-go's fake clientset);
//   - Provider.Provision, which waits for the rollout (available replicas,
//     Ready pods, ready endpoints) and opens the way in: a port-forward, a
//     NodePort or the ingress controller's address;
//   - Provider.Render, the manifests of `benchflow render --provider k8s`,
//     built without a cluster;
//   - Deployment.Alive (pods in CrashLoopBackOff, ImagePullBackOff…) and
//     Deployment.Processes (the containers' host processes on a local node)
//     for the engine's health wait and collect steps;
//   - GC, which deletes labelled leftovers for `benchflow gc`.
//
// Every object carries the providers.Label* labels (values made valid
// label values) so GC finds them. The client is built from the kubeconfig
// (or the in-cluster config) on first use.
//
// Sibling packages own the rest: providers (the interface and registry),
// providers/docker, providers/local and providers/nomad (other backends),
// engine/run (calls Provision and Teardown, runs the health check).
package k8s
