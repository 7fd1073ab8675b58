# One load from two agents on this machine, merged exactly.
#
#   benchflow apply pipelines/agents-local.hcl
#
# The load step's agents block starts two `benchflow agent` processes with
# the local provider; the controller measures their clocks, starts both at
# the same instant and merges their HDR histograms (docs/distributed.md).
# agents.parquet keeps each agent's own figures, latency.parquet each
# agent's buckets (column agent).

pipeline "agents-local" {
  description = "benchflow serve, loaded by two local agents"
  repetitions = 1
}

variable "duration" {
  type    = string
  default = "3s"
}

variable "agents" {
  type    = number
  default = 2
}

provider "local" "host" {}

service "web" {
  provider = "host"
  command  = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}"]
  port "http" {}
  health {
    http    = "/"
    timeout = "10s"
  }
}

# Warm steps take an agents block too.
step "warm" "web" {
  target      = "${service.web.url}/"
  connections = 4
  threads     = 2
  duration    = "1s"

  agents {
    provider = "host"
    count    = var.agents
  }
}

step "load" "main" {
  target      = "${service.web.url}/"
  connections = 8
  threads     = 2
  duration    = var.duration

  agents {
    provider = "host"
    count    = var.agents
  }
}

# Where the machine's CPU went: the agents count as the loader (role
# "loader" in processes.parquet), like benchflow itself.
step "collect" "cpu" {
  during   = step.load.main
  loader   = true
  interval = "500ms"
}
