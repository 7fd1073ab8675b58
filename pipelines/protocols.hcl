# HTTP/1.1 vs HTTP/2 vs HTTP/3, all over TLS, on benchflow's built-in server.
# Nothing to install (no Docker, no nginx, no Caddy); about a minute:
#
#   benchflow apply pipelines/protocols.hcl
#   benchflow report results/latest --baseline protocol=http/1.1
#
# `benchflow serve --h3` answers HTTP/1.1 and HTTP/2 (by ALPN) on a TCP
# port and HTTP/3 (QUIC) on the UDP port of the same number, with one
# self-signed certificate made at start; the load does not verify it (no
# cacert). Each connection keeps one request in flight over HTTP/1.1 and
# var.streams over HTTP/2 and HTTP/3, so the cells differ by protocol only
# in how the requests travel. The collect step's CPU budget says where each
# cell's CPU went: the server, the load generator, the kernel. The same on
# Caddy, with new connections per request and 0-RTT: examples/caddy-protocols.

pipeline "protocols" {
  description = "benchflow serve --h3: HTTP/1.1 vs HTTP/2 vs HTTP/3 over TLS, 6-byte and 4 KiB responses"
  repetitions = 3
}

variable "duration" {
  type        = string
  default     = "3s"
  description = "How long each measured load runs."
}

variable "connections" {
  type    = number
  default = 8
}

variable "streams" {
  type        = number
  default     = 4
  description = "Requests in flight per connection over HTTP/2 and HTTP/3 (HTTP/1.1 keeps one)."
}

matrix {
  protocol = ["http/1.1", "h2", "h3"]
  size     = ["6", "4KiB"]
}

provider "local" "host" {}

service "web" {
  provider = "host"
  command  = [benchflow.bin, "serve", "--h3", "--addr", "127.0.0.1:${self.port.https}", "--size", matrix.size]
  port "https" {}
  # TLS on the port: the health check only connects (a plain-HTTP request
  # to a TLS port is not an answer).
  health {
    tcp     = true
    timeout = "10s"
  }
}

step "warm" "web" {
  target      = "https://127.0.0.1:${service.web.ports.https}/"
  protocol    = matrix.protocol
  streams     = matrix.protocol == "http/1.1" ? 1 : var.streams
  connections = var.connections
  threads     = 1
  duration    = "1s"
}

step "load" "main" {
  target      = "https://127.0.0.1:${service.web.ports.https}/"
  protocol    = matrix.protocol
  streams     = matrix.protocol == "http/1.1" ? 1 : var.streams
  connections = var.connections
  threads     = 2
  duration    = var.duration
}

step "collect" "cpu" {
  during   = step.load.main
  loader   = true
  interval = "500ms"
}
