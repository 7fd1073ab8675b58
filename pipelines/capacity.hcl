# Capacity under a latency SLO: how much load does each variant carry while
# p99 stays under the bound? Runs against benchflow's built-in server as a
# queue of known capacity (workers × 1/delay), so the answer can be checked:
#
#   benchflow apply pipelines/capacity.hcl
#   benchflow report results/latest
#   duckdb -c "SELECT * FROM 'results/latest/probes.parquet'"
#
# With 5 ms per request, 2 workers carry 400 req/s and 4 workers 800 req/s;
# the search should land within a few percent below each on a quiet machine.

pipeline "capacity" {
  description = "benchflow serve as a queue of 2 or 4 workers at 5 ms: capacity under p99<100ms"
  repetitions = 1
}

variable "slo" {
  type    = string
  default = "p99<100ms,errors<0.1%"
}

variable "probe" {
  type        = string
  default     = "5s"
  description = "How long each probe of the search runs."
}

variable "max_probes" {
  type    = number
  default = 20
}

matrix {
  workers = [2, 4]
}

provider "local" "host" {}

service "web" {
  provider = "host"
  command  = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}", "--workers", "${matrix.workers}", "--delay", "5ms"]
  port "http" {}
  health {
    http    = "/"
    timeout = "10s"
  }
}

step "load" "capacity" {
  target      = "${service.web.url}/"
  connections = 64
  threads     = 1
  search {
    slo        = var.slo
    start_rate = 100
    probe      = var.probe
    max_probes = var.max_probes
  }
}

step "collect" "cpu" {
  during = step.load.capacity
  loader = true
}
