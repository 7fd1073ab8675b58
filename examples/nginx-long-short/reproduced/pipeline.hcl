# Study S5: a cloud vendor's method for nginx long vs short connections.
#
# nginx with access_log off serves four files of random bytes (6 B, 1 KiB,
# 4 KiB, 1 MiB); the load runs once with keep-alive ("long connections")
# and once with a new connection per request ("short connections", wrk's
# -H "Connection: close"), per file. The tuning the vendor lists is applied:
# worker_processes matched to the machine, listen … reuseport, and
# ulimit -n 65535 for nginx (the tune step; needs root, optional here).
#
#   benchflow apply examples/nginx-long-short/study.hcl
#   benchflow report results/latest --baseline connection=long

pipeline "nginx-long-short" {
  description = "nginx long (keep-alive) vs short (Connection: close) connections × file size"
  repetitions = 3
}

variable "duration" {
  type    = string
  default = "10s"
}

variable "connections" {
  type        = number
  default     = 256
  description = "The vendor used 1024 from a second machine; on one machine fewer connections avoid exhausting ephemeral ports in the short-connection runs."
}

variable "threads" {
  type    = number
  default = 2
}

variable "workers" {
  type        = string
  default     = "auto"
  description = "nginx worker_processes: matched to the machine (auto) as the vendor recommends."
}

variable "nginx" {
  type    = string
  default = "/usr/sbin/nginx"
}

matrix {
  file       = ["hello", "1k", "4k", "1M"]
  connection = ["long", "short"]
}

provider "local" "host" {}

service "nginx" {
  provider        = "host"
  command         = [var.nginx, "-p", self.dir, "-c", "${self.dir}/nginx.conf", "-g", "daemon off;"]
  version_command = [var.nginx, "-v"]

  file "nginx.conf" {
    template = file("nginx.conf.tmpl")
    vars     = { workers = var.workers }
  }
  file "hello" { content = "hello\n" }
  file "1k"    { random_bytes = "1KiB" }
  file "4k"    { random_bytes = "4KiB" }
  file "1M"    { random_bytes = "1MiB" }

  port "http" {}
  health { http = "/hello" }
}

step "tune" "ulimit" {
  nofile   = 65535
  optional = true
}

step "check" "file" {
  url       = "${service.nginx.url}/${matrix.file}"
  body_size = { hello = 6, "1k" = 1024, "4k" = 4096, "1M" = 1048576 }[matrix.file]
}

step "warm" "nginx" {
  target      = "${service.nginx.url}/${matrix.file}"
  connections = var.connections
  threads     = var.threads
  duration    = "2s"
  keepalive   = matrix.connection == "long"
}

step "load" "wrk" {
  target      = "${service.nginx.url}/${matrix.file}"
  connections = var.connections
  threads     = var.threads
  duration    = var.duration
  keepalive   = matrix.connection == "long"
}

step "collect" "cpu" {
  during    = step.load.wrk
  processes = ["nginx"]
  loader    = true
}

# The study's point (S5), checked on every run (docs/language.md): for a
# small file, a new connection per request costs most of the req/s.
claim "long-beats-short" {
  description = "For the 6-byte file, short connections (Connection: close) deliver less than half the req/s of keep-alive"
  metric      = "rps"
  cell        = { file = "hello", connection = "short" }
  versus      = { connection = "long" }
  ratio       = "< 0.5"
}
