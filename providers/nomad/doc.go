// Package nomad is the "nomad" provider: it runs a service as a Nomad job
// whose allocations register in Consul (or, with service_provider "nomad",
// in Nomad's own service discovery), and optionally publishes it through
// an Apache APISIX route — the gateway architecture of study S3.
//
// Entry points: Type (providers.TypeOf) registers itself in init() as "nomad"
// (import the package for its side effect); New builds a Provider from a
// decoded *Config, whose Validate reports each bad attribute as a
// providers.ConfigError; Provider.Provision registers the job and waits, in
// turn, for the evaluation (unplaceable jobs fail fast with the scheduler's
// reasons), the allocations (a failed one is explained by the task event
// that caused it and its stderr, alloc.go), the deployment and Consul's
// passing checks (blocking queries) — or Nomad's service registrations
// (registrations.go) — then creates the APISIX upstream and route, waits
// until APISIX's Consul discovery holds every instance and the gateway
// answers through the route. Deployment.Teardown (teardown.go) deletes the
// route and the upstream, purges the job, waits until every allocation
// stopped, copies their logs to the trial's logs folder and waits until
// Consul (or Nomad) forgot the service. GC (gc.go) removes leftovers
// labelled dev.benchflow.managed whose owning run is gone.
//
// Deployment.Processes (processes.go) reports, for collect and tune
// steps, the processes of the allocations' tasks (the pids of the
// client's allocation stats; for docker tasks, their container's) when
// the Nomad client is this machine, and their executors (or
// containerd-shims) as infrastructure.
//
// The endpoint is the first allocation's address; Endpoint.Attrs carry
// gateway_url (service.<name>.gateway_url in pipelines), job, group, task,
// allocations, service and consul_service.
//
// Tokens and the APISIX admin key come from environment variables or
// files named in the config; only the names are stored, and no error or
// log line contains a secret.
//
// Sub-packages: consul (waiting for passing instances), apisix (the Admin
// API v3 client) and fake (httptest servers replaying the Nomad, Consul
// and APISIX APIs, used by the tests). Siblings: providers/local,
// providers/docker and providers/k8s deploy the same ServiceSpec elsewhere.
package nomad
