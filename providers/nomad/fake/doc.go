// Package fake holds httptest servers that replay the subset of the Nomad,
// Consul and Apache APISIX HTTP APIs that providers/nomad uses, following
// their public API documentation: paths, query parameters (index, wait,
// passing, purge, namespace, region), headers (X-Nomad-Index,
// X-Consul-Index, X-API-KEY, X-Nomad-Token, X-Consul-Token), JSON shapes,
// status codes and error bodies.
//
// The fakes carry real traffic. NewNomad "runs" each allocation as an
// in-process HTTP server on 127.0.0.1 and registers it in a Consul fake,
// whose health checks are real HTTP requests to the allocation — or, for
// services with provider "nomad", in its own service discovery (GET
// /v1/service/:name), running their checks itself as a Nomad client does
// (services.go). NewAPISIX serves a gateway that proxies matching routes
// round-robin to the nodes of the route's upstream (explicit, or resolved
// from the Consul fake for discovery_type "consul"). A load step through
// the gateway therefore measures a real proxy hop on loopback.
//
// They replay what real agents do, not only what the documentation says:
// the Nomad fake is asynchronous like Nomad 1.6.5 (pending evaluations and
// allocations, allocations that stop after the deregistration answered,
// task events that end with "Not Restarting", purged jobs' allocations
// still listed under their id, a client node on this machine whose
// allocation stats list the pids of the raw_exec tasks it runs for real:
// stats.go), and the APISIX fake follows
// APISIX's schema (apisix/schema_def.lua) and can lag like its worker
// caches (RouteCacheLag, DiscoveryLag).
//
// Each reports a realistic version where the real piece does (versions.go):
// Nomad 1.6.5 in GET /v1/agent/self, /v1/agent/members and its node's
// nomad.version, Consul 1.16.4 in GET /v1/agent/self, APISIX 3.9.1 in the
// Server header of its admin API and gateway, and etcd 3.4.23 in GET
// /version (NewEtcd, APISIX's store as far as its version).
//
// Entry points: NewConsul, NewNomad, NewAPISIX, NewEtcd, and NewStack, which
// starts them wired together (NewStackWithoutConsul: no Consul).
// Every fake exposes its state (jobs, running allocations, Consul instances
// and Nomad service registrations, routes, upstreams) so tests can assert
// that nothing was left registered.
package fake
