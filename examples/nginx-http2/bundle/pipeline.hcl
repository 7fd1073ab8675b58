# nginx over HTTP/1.1 and HTTP/2, cleartext and TLS.
#
# Debian's nginx serves one small file (6 bytes) with keep-alive; the load
# generator speaks, per cell, HTTP/1.1 or HTTP/2 (h2c with prior knowledge
# in cleartext, h2 by ALPN over TLS), each connection carrying one request
# at a time (HTTP/1.1) or var.streams concurrent streams (HTTP/2). The TLS
# certificate is self-signed, made by openssl when the service starts, in
# the trial's own folder (removed at teardown: nothing secret is kept, in
# the results or elsewhere). The collect step's CPU budget says where each
# cell's CPU went: nginx, the load generator, the kernel.
#
#   benchflow apply examples/nginx-http2/pipeline.hcl
#   benchflow report results/latest --baseline tls=off

pipeline "nginx-http2" {
  description = "nginx: HTTP/1.1 vs HTTP/2 (h2c, h2 over TLS), cleartext vs TLS, keep-alive, a 6-byte file"
  repetitions = 5
}

variable "duration" {
  type    = string
  default = "5s"
}

variable "connections" {
  type        = number
  default     = 16
  description = "Connections, the same in every cell: HTTP/1.1 keeps this many requests in flight, HTTP/2 this many times streams."
}

variable "streams" {
  type        = number
  default     = 10
  description = "HTTP/2 streams in flight per connection (nginx allows 128: http2_max_concurrent_streams)."
}

variable "threads" {
  type    = number
  default = 2
}

variable "engine" {
  type        = string
  default     = "goroutines"
  description = "The load engine of every cell. TLS and HTTP/2 loads run on goroutines whatever is asked; the cleartext HTTP/1.1 cell runs there too so that the four cells' client differs only by protocol and TLS (auto would put it on epoll, docs/load.md#engines)."
}

variable "workers" {
  type        = string
  default     = "auto"
  description = "nginx worker_processes"
}

variable "nginx" {
  type    = string
  default = "/usr/sbin/nginx"
}

variable "openssl" {
  type    = string
  default = "openssl"
}

matrix {
  protocol = ["h1", "h2"]
  tls      = ["off", "on"]
}

provider "local" "host" {}

locals {
  scheme = matrix.tls == "on" ? "https" : "http"
}

service "nginx" {
  provider = "host"
  # First a self-signed ECDSA P-256 certificate for localhost and
  # 127.0.0.1, valid a day, made in the trial's folder (umask 077: the key
  # is the owner's only; the folder and the key go at teardown, and only
  # rendered files are kept in logs/), then nginx in place of the shell.
  # Every cell makes one, so that the cells start alike; only the TLS
  # cells' nginx.conf reads it.
  command = ["/bin/sh", "-c", join(" ", [
    "(umask 077 && '${var.openssl}' req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256",
    "-nodes -days 1 -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1",
    "-keyout '${self.dir}/key.pem' -out '${self.dir}/cert.pem') 2>&1 &&",
    "exec '${var.nginx}' -p '${self.dir}' -c '${self.dir}/nginx.conf' -g 'daemon off;'",
  ])]
  version_command = [var.nginx, "-v"]

  file "nginx.conf" {
    template = file("nginx.conf.tmpl")
    vars     = { workers = var.workers }
  }
  file "hello" { content = "hello\n" }

  port "health" {}
  port "bench" {}
  health { http = "/hello" }
}

# The check reads the file from the health port, plain HTTP/1.1 in every
# cell: the measured port speaks h2c in one cell, and the check's client
# verifies certificates, which a self-signed one does not pass. Every load
# reports what it negotiated instead: protocol, streams, tls_version,
# tls_cipher and alpn in trials.parquet.
step "check" "hello" {
  url       = "http://127.0.0.1:${service.nginx.ports.health}/hello"
  body_size = 6
}

step "warm" "nginx" {
  target      = "${local.scheme}://127.0.0.1:${service.nginx.ports.bench}/hello"
  protocol    = matrix.protocol == "h2" ? "h2" : "http/1.1"
  streams     = matrix.protocol == "h2" ? var.streams : 1
  connections = var.connections
  threads     = var.threads
  engine      = var.engine
  duration    = "2s"
}

step "load" "main" {
  target      = "${local.scheme}://127.0.0.1:${service.nginx.ports.bench}/hello"
  protocol    = matrix.protocol == "h2" ? "h2" : "http/1.1"
  streams     = matrix.protocol == "h2" ? var.streams : 1
  connections = var.connections
  threads     = var.threads
  engine      = var.engine
  duration    = var.duration
}

step "collect" "cpu" {
  during    = step.load.main
  processes = ["nginx"]
  loader    = true
}

# The study's conclusions, checked on every run (docs/language.md, claim).
# They are written far from what we measured, so that a noisy machine makes
# them inconclusive rather than failed; req/s themselves do not carry over
# between machines.

# TLS is work per request for both ends: with HTTP/1.1 each response is its
# own TLS record (encrypt, MAC) and each request one to decrypt, which on a
# saturated machine shows as fewer req/s.
claim "tls-costs-h1" {
  description = "Over HTTP/1.1, TLS costs more than 10% of the req/s of cleartext"
  metric      = "rps"
  cell        = { protocol = "h1", tls = "on" }
  versus      = { tls = "off" }
  ratio       = "< 0.9"
}

# Both ends handle the same requests in a trial, so the ratio of their CPU
# is the ratio of their CPU per request. nginx decodes every request's
# header block (HPACK), keeps per-stream state and frames each response;
# the load generator sends a header block encoded once per target and
# decodes no more of a response than its :status.
claim "h2c-server-does-more" {
  description = "Over cleartext HTTP/2, nginx uses more than 1.2 times the load generator's CPU for the same requests"
  metric        = "cpu_service_pct"
  versus_metric = "cpu_loader_pct"
  cell          = { protocol = "h2", tls = "off" }
  ratio         = "> 1.2"
}

# TLS is paid per record and per system call more than per byte: HTTP/2
# puts the frames of several streams into one record and one write, so over
# TLS its multiplexing outweighs the server's extra HTTP/2 work.
claim "h2-keeps-up-under-tls" {
  description = "Over TLS, HTTP/2 with several streams per connection delivers at least the req/s of HTTP/1.1 on the same connections"
  metric      = "rps"
  cell        = { protocol = "h2", tls = "on" }
  versus      = { protocol = "h1" }
  ratio       = "> 1"
}

# Both cells serve the same requests, so CPU per request is the fair
# measure of what TLS costs the server: nginx encrypts every response
# record and decrypts every request (AES-GCM), and reads and writes through
# OpenSSL's records, which cleartext does not.
claim "tls-costs-nginx-cpu-h1" {
  description = "Over HTTP/1.1, nginx spends more than 1.1 times the CPU per request with TLS than in cleartext"
  metric      = "cpu_service_us_per_req"
  cell        = { protocol = "h1", tls = "on" }
  versus      = { tls = "off" }
  ratio       = "> 1.1"
}
