# The cloud vendor's nginx method (study S5) across two machines: nginx on
# the server host, reached over SSH, and the load from the client — the
# machine running benchflow — over a link whose rate is a matrix axis.
#
# nginx with access_log off serves four files of random bytes (6 B, 1 KiB,
# 4 KiB, 1 MiB), with keep-alive ("long connections") and with a new
# connection per request ("short"), over the link shaped to 10 Gbit/s and
# to 1 Gbit/s by an exec step before each trial (link.sh: tc's tbf on both
# ends). The hosts come from variables, so the study maps onto any two
# machines:
#
#   benchflow apply examples/two-hosts/study.hcl --var server=10.0.0.2 \
#     --var user=bench --var identity=~/.ssh/benchflow \
#     --var 'server_exec=ssh -i ~/.ssh/benchflow bench@10.0.0.2 sudo'
#
# On one machine, examples/two-hosts/hosts.sh makes the two hosts as
# network namespaces (README.md).

pipeline "two-hosts" {
  description = "nginx on one host, the load from another: long vs short connections × file size × link rate"
  repetitions = 3
}

variable "server" {
  type        = string
  description = "The server host's address: benchflow logs in there over SSH, nginx listens there, the load goes there."
}

variable "user" {
  type    = string
  default = "root"
}

variable "identity" {
  type        = string
  default     = "~/.ssh/id_ed25519"
  description = "The private key benchflow logs in with (OpenSSH format, no passphrase)."
}

variable "known_hosts" {
  type    = string
  default = "~/.ssh/known_hosts"
}

variable "links" {
  type        = list(string)
  default     = ["10gbit", "1gbit"]
  description = "The link rates, tc's syntax; [\"native\"] leaves the link unshaped (two real machines on their own NICs)."
}

variable "server_exec" {
  type        = string
  default     = ""
  description = "A command prefix that runs a command on the server as root, for link.sh to shape the server's side (\"ssh bench@10.0.0.2 sudo\"); empty, only the client's side is shaped."
}

variable "duration" {
  type    = string
  default = "10s"
}

variable "connections" {
  type    = number
  default = 64
}

variable "threads" {
  type    = number
  default = 2
}

variable "workers" {
  type        = string
  default     = "auto"
  description = "nginx worker_processes: matched to the server (auto), as the vendor recommends."
}

matrix {
  link       = var.links
  file       = ["hello", "1k", "4k", "1M"]
  connection = ["long", "short"]
}

provider "ssh" "server" {
  address       = var.server
  user          = var.user
  identity_file = var.identity
  known_hosts   = var.known_hosts
}

service "nginx" {
  provider        = "server"
  command         = ["/usr/sbin/nginx", "-p", self.dir, "-c", "${self.dir}/nginx.conf", "-g", "daemon off;", "-e", "stderr"]
  version_command = ["/usr/sbin/nginx", "-v"]

  file "nginx.conf" {
    template = file("nginx.conf.tmpl")
    vars     = { workers = var.workers, server = var.server }
  }
  file "hello" { content = "hello\n" }
  file "1k"    { random_bytes = "1KiB" }
  file "4k"    { random_bytes = "4KiB" }
  file "1M"    { random_bytes = "1MiB" }

  port "http" { host = 8080 }
  health { http = "/hello" }
}

# The link's rate for this trial, both ways (link.sh, read from this folder
# and recorded in the bundle).
step "exec" "link" {
  command = concat(["/bin/sh", "-c", file("link.sh"), "link.sh", matrix.link, var.server], compact(split(" ", var.server_exec)))
  timeout = "30s"
}

step "check" "file" {
  url       = "${service.nginx.url}/${matrix.file}"
  body_size = { hello = 6, "1k" = 1024, "4k" = 4096, "1M" = 1048576 }[matrix.file]
}

step "warm" "nginx" {
  target      = "${service.nginx.url}/${matrix.file}"
  connections = var.connections
  threads     = var.threads
  duration    = "1s"
  keepalive   = matrix.connection == "long"
}

step "load" "wrk" {
  target      = "${service.nginx.url}/${matrix.file}"
  connections = var.connections
  threads     = var.threads
  duration    = var.duration
  keepalive   = matrix.connection == "long"
}

# The load generator's CPU on the client (the server's processes are on
# another machine: collect does not sample them yet).
step "collect" "cpu" {
  during = step.load.wrk
  loader = true
}

# What the link explains. A 1 MiB response is 8.4 Mbit: 1 Gbit/s carries
# at most 119 of them a second (headers and TCP/IP framing make it fewer),
# 10 Gbit/s 1,192. Both bounds hold on any machine, busy or not.
claim "1M-bounded-by-1gbit" {
  enabled     = contains(var.links, "1gbit")
  description = "1 MiB responses over the 1 Gbit/s link: at most the link's rate, 119 req/s (claimed below 135, the 95% interval's room)"
  metric      = "rps"
  cell        = { link = "1gbit", file = "1M" }
  value       = "< 135"
}

claim "1M-bounded-by-10gbit" {
  enabled     = contains(var.links, "10gbit")
  description = "1 MiB responses over the 10 Gbit/s link: at most the link's rate, 1,192 req/s (claimed below 1,350)"
  metric      = "rps"
  cell        = { link = "10gbit", file = "1M" }
  value       = "< 1350"
}

claim "link-limits-1M" {
  enabled     = contains(var.links, "1gbit") && contains(var.links, "10gbit")
  description = "For 1 MiB responses the link is the limit: the 10 Gbit/s link serves at least 1.5 times the req/s of the 1 Gbit/s one"
  metric      = "rps"
  cell        = { link = "10gbit", file = "1M" }
  versus      = { link = "1gbit" }
  ratio       = "> 1.5"
}

claim "link-bounds-bytes-not-requests" {
  enabled     = contains(var.links, "1gbit")
  description = "The 1 Gbit/s link bounds bytes, not requests: it carries at least 5 times more 6-byte responses a second than 1 MiB ones (at most 119)"
  metric      = "rps"
  cell        = { link = "1gbit", file = "hello" }
  versus      = { file = "1M" }
  ratio       = "> 5"
}
