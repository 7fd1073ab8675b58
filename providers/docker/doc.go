// Package docker is the "docker" provider: it runs a service as a container
// on a Docker engine through the Engine API (the official Go client).
//
// Entry points:
//
//   - Type, the provider type built by providers.TypeOf, registers itself
//     in init() as "docker"; the engine finds it with
//     providers.Lookup("docker"), decodes the pipeline's `provider "docker"
//     "<name>" { … }` block into a *Config (NewConfig), checks it with
//     Config.Validate (errors name the attribute) and calls New.
//   - (*Provider).Provision pulls the image according to Config.Pull,
//     creates the network when Config.Network names a user network, and
//     creates and starts the container with the service's files mounted
//     read-only, its ports published on Config.Bind, and its limits.
//   - the returned *Deployment implements providers.Deployment (Endpoint,
//     Teardown), providers.Liveness (Alive: the container's exit code and
//     last log lines when it died) and providers.ProcessReporter
//     (Processes: the container's processes as host pids, plus the
//     docker-proxy, dockerd and containerd-shim processes serving it) and
//     providers.ContainerReporter (Containers: its id, address, published
//     ports and root filesystem directories, by which the machine
//     accounting tells its helpers from another run's).
//   - GC removes every container, network and volume labelled
//     providers.LabelManaged that a crashed run left behind.
//
// The images tests and examples use are built without a registry by
// images/build.sh (`make images`); the dockertest sub-package runs it and
// checks that tests leave nothing behind.
//
// Sibling packages own the rest: engine/run calls Provision, runs the health
// check and Teardown; engine/collect samples the processes reported here;
// providers/local runs the same service as a host process.
package docker
