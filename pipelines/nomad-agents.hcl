# A load from agents scheduled by Nomad, merged exactly (docs/distributed.md).
#
# Needs a Nomad agent (server + client) with the raw_exec driver enabled
# (plugin "raw_exec" { config { enabled = true } }) on this machine or on
# clients that can run this benchflow binary at the same path. Consul is not
# needed: the agents job registers with Nomad's own service discovery
# (service_provider = "nomad"; "consul" registers in Consul instead).
#
#   benchflow apply pipelines/nomad-agents.hcl --var nomad_addr=http://127.0.0.1:4646
#
# Each trial starts `benchflow serve` here, then one Nomad job of two
# allocations, each running `benchflow agent`; the controller reaches them at
# their allocations' addresses, measures their clocks, starts both at one
# instant and merges their histograms. The job is purged afterwards and the
# allocations' logs kept under logs/.

pipeline "nomad-agents" {
  description = "benchflow serve on this machine, loaded by two agents Nomad runs"
  repetitions = 1
}

variable "duration" {
  type    = string
  default = "5s"
}

variable "agents" {
  type    = number
  default = 2
}

variable "nomad_addr" {
  type        = string
  default     = ""
  description = "Nomad's HTTP API; empty means $NOMAD_ADDR, else http://127.0.0.1:4646."
}

variable "service_provider" {
  type        = string
  default     = "nomad"
  description = "Where the agents job registers its health-checked service: \"nomad\" (no Consul needed) or \"consul\"."
}

provider "local" "host" {}

provider "nomad" "cluster" {
  address          = var.nomad_addr
  service_provider = var.service_provider
}

service "web" {
  provider = "host"
  command  = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}"]
  port "http" {}
  health {
    http    = "/"
    timeout = "10s"
  }
}

step "load" "wrk" {
  target      = "${service.web.url}/"
  connections = 8
  threads     = 2
  duration    = var.duration

  agents {
    provider = "cluster"
    count    = var.agents
  }
}
