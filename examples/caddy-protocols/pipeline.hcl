# Caddy: HTTP/1.1 vs HTTP/2 vs HTTP/3, everything over TLS, a 6-byte and a
# 64 KiB file, on connections kept alive and on a new connection per
# request (the handshake's cost: TCP + TLS 1.3 vs QUIC, and QUIC with
# 0-RTT resumption). README.md says what each cell is and what it showed.
#
#   make build caddy       # Caddy v2.11.9 from the Go module proxy into /var/cache/benchflow-caddy
#   bin/benchflow apply examples/caddy-protocols/pipeline.hcl
#   bin/benchflow report results/latest --baseline protocol=http/1.1

pipeline "caddy-protocols" {
  description = "Caddy: HTTP/1.1 vs h2 vs h3 over TLS, 6 B and 64 KiB, keep-alive vs a new connection per request (with and without 0-RTT)"
  repetitions = 3
}

variable "duration" {
  type        = string
  default     = "3s"
  description = "How long each measured load runs."
}

variable "connections" {
  type        = number
  default     = 8
  description = "Connections, the same in every cell; each keeps one request in flight (streams = 1), so the cells differ by protocol only."
}

variable "caddy" {
  type        = string
  default     = "/var/cache/benchflow-caddy/caddy"
  description = "The Caddy binary (make caddy builds v2.11.9 there)."
}

variable "openssl" {
  type    = string
  default = "openssl"
}

matrix {
  protocol = ["http/1.1", "h2", "h3"]
  size     = ["6B", "64KiB"]
  # keepalive: connections kept open; close: a new connection (a full
  # TCP + TLS or QUIC handshake) per request; 0rtt (HTTP/3 only): a new
  # QUIC connection per request that resumes a session and sends its
  # request as 0-RTT early data.
  conn    = ["keepalive", "close", "0rtt"]
  # The load generator opens no HTTP/2 connection per request (it says so
  # and refuses), and 0-RTT is QUIC's: 6 of the 9 combinations, × 2 sizes.
  exclude = [{ protocol = "http/1.1", conn = "0rtt" }, { protocol = "h2", conn = "close" }, { protocol = "h2", conn = "0rtt" }]
}

provider "local" "host" {}

locals {
  path = matrix.size == "6B" ? "/6b" : "/64k"
}

service "caddy" {
  provider = "host"
  # A self-signed ECDSA P-256 certificate for 127.0.0.1, made in the
  # service's folder (removed at teardown), then Caddy with its data and
  # config folders there too, not in the user's home.
  command = ["/bin/sh", "-c", join(" ", [
    "(umask 077 && '${var.openssl}' req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256",
    "-nodes -days 1 -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1",
    "-keyout '${self.dir}/key.pem' -out '${self.dir}/cert.pem') 2>&1 &&",
    "HOME='${self.dir}' XDG_DATA_HOME='${self.dir}/data' XDG_CONFIG_HOME='${self.dir}/config'",
    "exec '${var.caddy}' run --config '${self.dir}/Caddyfile' --adapter caddyfile",
  ])]
  version_command = [var.caddy, "version"]
  file "Caddyfile" {
    template = file("Caddyfile.tmpl")
    vars     = { dir = self.dir, port = self.port.https }
  }
  file "6b" { content = "hello\n" }
  file "64k" { random_bytes = "64KiB" } # seeded: the same bytes in every trial
  port "https" {}
  # TLS on the port: the health check only connects.
  health {
    tcp     = true
    timeout = "20s"
  }
}

step "warm" "caddy" {
  target      = "https://127.0.0.1:${service.caddy.ports.https}${local.path}"
  protocol    = matrix.protocol
  keepalive   = matrix.conn == "keepalive"
  h3_0rtt     = matrix.conn == "0rtt"
  connections = var.connections
  threads     = 2
  duration    = "1s"
}

step "load" "main" {
  target      = "https://127.0.0.1:${service.caddy.ports.https}${local.path}"
  protocol    = matrix.protocol
  keepalive   = matrix.conn == "keepalive"
  h3_0rtt     = matrix.conn == "0rtt"
  connections = var.connections
  threads     = 2
  duration    = var.duration
}

step "collect" "cpu" {
  during    = step.load.main
  processes = ["caddy"]
  loader    = true
}

# What the study concludes, each judged on every run (report, reproduce).
claim "h3-costs-caddy-cpu" {
  description = "On connections kept alive, Caddy spends more than 1.5 times the CPU per 6-byte response over HTTP/3 as over HTTP/1.1 (QUIC's packets, encryption and acknowledgements run in user space)"
  metric      = "cpu_service_us_per_req"
  cell        = { protocol = "h3", size = "6B", conn = "keepalive" }
  versus      = { protocol = "http/1.1" }
  ratio       = "> 1.5"
}

claim "h3-slower-kept-alive" {
  description = "On connections kept alive, HTTP/3 delivers less than 70% of HTTP/1.1's req/s for a 6-byte file"
  metric      = "rps"
  cell        = { protocol = "h3", size = "6B", conn = "keepalive" }
  versus      = { protocol = "http/1.1" }
  ratio       = "< 0.7"
}

claim "handshake-dominates" {
  description = "A new TCP + TLS 1.3 connection per request delivers less than 30% of the req/s of connections kept alive (6 bytes, HTTP/1.1): the handshake, not the response, is the work"
  metric      = "rps"
  cell        = { protocol = "http/1.1", size = "6B", conn = "close" }
  versus      = { conn = "keepalive" }
  ratio       = "< 0.3"
}

claim "zero-rtt-helps" {
  description = "With a new QUIC connection per 6-byte request, resuming a session with 0-RTT early data delivers more than 1.1 times the req/s of a full handshake"
  metric      = "rps"
  cell        = { protocol = "h3", size = "6B", conn = "0rtt" }
  versus      = { conn = "close" }
  ratio       = "> 1.1"
}
