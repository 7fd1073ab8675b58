# What does an API gateway cost, and how does it scale with instances?
#
# Study S3, second half: Consul is the service catalog, Nomad schedules the
# web job (group "servers", task "web") and registers it in Consul, and
# Apache APISIX routes to it through Consul service discovery. Every trial
# registers the job, waits for its Consul checks, creates the APISIX
# upstream and route (gateway trials), warms, loads and tears it all down.
#
#   export NOMAD_ADDR=http://127.0.0.1:4646
#   export CONSUL_HTTP_ADDR=127.0.0.1:8500
#   export APISIX_ADMIN=http://127.0.0.1:9180 APISIX_GATEWAY=http://127.0.0.1:9080
#   export APISIX_CONTROL=http://127.0.0.1:9090   # Consul discovery check
#   export APISIX_ETCD=http://127.0.0.1:2379      # etcd's version, in the manifest
#   export APISIX_PID_FILE=/srv/apisix/logs/nginx.pid   # APISIX's nginx master
#   export APISIX_ADMIN_KEY=...            # never written to the results
#   benchflow apply pipelines/gateway.hcl
#   benchflow report results/latest
#
# Without APISIX, run the direct path alone (Nomad and Consul only):
#
#   benchflow apply pipelines/gateway.hcl --var 'paths=["direct"]'
#
# Without Consul, Nomad's own service discovery registers the service and
# APISIX's upstream lists the instances Nomad registered:
#
#   benchflow apply pipelines/gateway.hcl --var service_provider=nomad
#
# docs/gateway.md explains the Nomad, Consul and APISIX settings it needs.
#
# "direct" loads the first allocation (service.web.url); "gateway" loads
# the APISIX route (service.web.gateway_url), which spreads requests over
# all `count` allocations. Compare the two at count = 1 for the cost of the
# proxy hop; follow "gateway" across count for the scaling.

pipeline "gateway" {
  description = "benchflow serve as a Nomad job: direct vs through APISIX (Consul discovery) × instance count"
  # Five repetitions: the claims' confidence intervals need at least three,
  # and with two every claim comes out inconclusive.
  repetitions = 5
}

variable "duration" {
  type        = string
  default     = "10s"
  description = "How long each measured load runs."
}

variable "warm" {
  type        = string
  default     = "3s"
  description = "How long the warm-up before each measured load runs."
}

variable "connections" {
  type    = number
  default = 32
  validation {
    condition     = var.connections >= 1 && var.connections <= 10000
    error_message = "connections must be between 1 and 10000."
  }
}

variable "paths" {
  type        = list(string)
  default     = ["direct", "gateway"]
  description = "Which paths to measure: \"direct\" (Nomad and Consul only) and/or \"gateway\" (through APISIX)."
  validation {
    condition     = length(var.paths) > 0 && length(distinct(var.paths)) == length(var.paths) && length([for p in var.paths : p if !contains(["direct", "gateway"], p)]) == 0
    error_message = "paths must list \"direct\", \"gateway\" or both, once each, e.g. --var 'paths=[\"direct\"]'."
  }
}

variable "driver" {
  type        = string
  default     = "raw_exec"
  description = "Nomad task driver. Only raw_exec can run benchflow.bin: it runs it on the Nomad client, which must be this host or have benchflow at the same path."
  validation {
    # exec runs the task in a chroot built from the client's chroot_env
    # (/bin, /etc, /lib, /lib64, /sbin, /usr, ... by default), where a
    # benchflow binary outside those folders does not exist.
    condition     = var.driver == "raw_exec"
    error_message = "driver must be raw_exec: the exec driver's chroot does not contain benchflow.bin (see docs/providers/nomad.md, \"The exec driver\"; docs/gateway.md shows nginx with the docker driver)."
  }
}

variable "service_provider" {
  type        = string
  default     = "consul"
  description = "Where the job's service registers: \"consul\", or \"nomad\" for Nomad's own service discovery (no Consul needed; the gateway's upstream then lists the instances as nodes)."
  validation {
    condition     = contains(["consul", "nomad"], var.service_provider)
    error_message = "service_provider must be \"consul\" or \"nomad\"."
  }
}

variable "bind" {
  type        = string
  default     = "127.0.0.1"
  description = "The address each instance listens on: loopback for a stack on this machine (Nomad's client on 127.0.0.1); \"0.0.0.0\" when the Nomad client advertises another interface."
}

matrix {
  path  = var.paths
  count = [1, 2, 4]
}

# Connection settings come from NOMAD_ADDR, CONSUL_HTTP_ADDR, APISIX_ADMIN,
# APISIX_GATEWAY, APISIX_CONTROL, APISIX_ETCD and APISIX_PID_FILE; tokens and the admin key from NOMAD_TOKEN,
# CONSUL_HTTP_TOKEN and APISIX_ADMIN_KEY (or the *_env / *_file attributes).
provider "nomad" "cluster" {
  driver        = var.driver
  count         = matrix.count
  group         = "servers"
  task          = "web"
  cpu           = 500
  memory        = 64
  gateway       = matrix.path == "gateway"
  route_uri     = "/*"
  # APISIX finds the instances through its Consul discovery, or, without
  # Consul, in the upstream's nodes.
  service_provider = var.service_provider
  discovery        = var.service_provider == "nomad" ? "nodes" : "consul"
  ready_timeout    = "3m"
}

service "web" {
  provider = "cluster"
  # self.port.http becomes ${NOMAD_PORT_http}: each allocation listens on
  # the port Nomad gives it.
  command = [benchflow.bin, "serve", "--addr", "${var.bind}:${self.port.http}"]
  port "http" {}
  health {
    http    = "/"
    timeout = "3m"
  }
}

locals {
  # Not a function of the service, so it can be built before provisioning.
  through_gateway = matrix.path == "gateway"
}

step "check" "answers" {
  url    = local.through_gateway ? "${service.web.gateway_url}/" : "${service.web.url}/"
  status = 200
}

step "warm" "web" {
  target      = local.through_gateway ? "${service.web.gateway_url}/" : "${service.web.url}/"
  connections = var.connections
  threads     = 2
  duration    = var.warm
  depends_on  = [step.check.answers]
}

step "load" "main" {
  target      = local.through_gateway ? "${service.web.gateway_url}/" : "${service.web.url}/"
  connections = var.connections
  threads     = 2
  duration    = var.duration
  depends_on  = [step.warm.web]
}

step "collect" "cpu" {
  during   = step.load.main
  loader   = true
  interval = "1s"
}

# The conclusions this study checks on every run (docs/language.md#claim).
# They are about the gateway path: with --var 'paths=["direct"]' there are
# no gateway cells, and enabled turns them off (plan lists them as off;
# they are not judged or recorded).
claim "gateway-costs" {
  description = "Through APISIX, one instance delivers less than 60% of the req/s it delivers directly: the proxy hop is the dearer half of a request"
  enabled     = contains(var.paths, "gateway")
  metric      = "rps"
  cell        = { path = "gateway", count = 1 }
  versus      = { path = "direct" }
  ratio       = "< 0.6"
}

claim "gateway-cpu" {
  description   = "On the gateway path, APISIX's workers (infrastructure) use at least half as much CPU as the web service they route to"
  enabled       = contains(var.paths, "gateway")
  metric        = "cpu_infra_pct"
  versus_metric = "cpu_service_pct"
  cell          = { path = "gateway" }
  ratio         = "> 0.5"
}
