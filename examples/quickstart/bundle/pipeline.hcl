# The quickstart: benchmark benchflow's built-in server on this machine.
# Nothing to install; runs in about a minute:
#
#   benchflow apply pipelines/quickstart.hcl
#   benchflow report results/latest
#
# Two matrix axes (response size × keep-alive) and three repetitions give
# 12 trials, interleaved so that machine drift spreads over every cell;
# three repetitions are the fewest that give a 95% confidence interval
# (with two, report shows the min-max range).

pipeline "quickstart" {
  description = "benchflow serve: response size × keep-alive, on loopback"
  repetitions = 3
}

variable "duration" {
  type        = string
  default     = "3s"
  description = "How long each measured load runs."
}

variable "connections" {
  type    = number
  default = 16
  validation {
    condition     = var.connections >= 1 && var.connections <= 10000
    error_message = "connections must be between 1 and 10000."
  }
}

matrix {
  size      = ["6", "4KiB"]
  keepalive = [true, false]
}

provider "local" "host" {}

service "web" {
  provider = "host"
  command  = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}", "--size", matrix.size]
  port "http" {}
  health {
    http    = "/"
    timeout = "10s"
  }
}

step "check" "answers" {
  url       = "${service.web.url}/"
  status    = 200
  body_size = matrix.size == "6" ? 6 : 4096
}

step "warm" "web" {
  target      = "${service.web.url}/"
  connections = var.connections
  threads     = 1
  duration    = "1s"
  keepalive   = matrix.keepalive
}

step "load" "main" {
  target      = "${service.web.url}/"
  connections = var.connections
  threads     = 2
  duration    = var.duration
  keepalive   = matrix.keepalive
}

step "collect" "cpu" {
  during   = step.load.main
  loader   = true
  interval = "500ms"
}

# The conclusions this study checks on every run (docs/language.md,
# "claim"). Both are far from their bounds on any machine seen so far, so
# that `benchflow reproduce` in CI fails only on a real change.
claim "keepalive-pays" {
  description = "A new connection per request costs more than 30% of the req/s of keep-alive"
  metric      = "rps"
  cell        = { keepalive = false }
  versus      = { keepalive = true }
  ratio       = "< 0.7"
}

claim "big-is-cheap" {
  description = "4 KiB responses keep more than half the req/s of 6-byte ones"
  metric      = "rps"
  cell        = { size = "4KiB" }
  versus      = { size = "6" }
  ratio       = "> 0.5"
}
