# Debian's nginx on this machine, access log on vs off (study S1's host
# variant). Needs the nginx package (apt-get install nginx); no root needed
# unless the tune step's settings are to apply (they are optional here).
#
#   benchflow apply pipelines/nginx-local.hcl --var duration=10s
#   benchflow report results/latest --baseline access_log=off

pipeline "nginx-local" {
  description = "Debian nginx on loopback: access log on vs off"
  repetitions = 3
}

variable "duration" {
  type    = string
  default = "5s"
}

variable "nginx" {
  type        = string
  default     = "/usr/sbin/nginx"
  description = "Path of the nginx binary."
}

variable "workers" {
  type    = number
  default = 1
}

matrix {
  access_log = ["on", "off"]
}

provider "local" "host" {}

service "nginx" {
  provider        = "host"
  command         = [var.nginx, "-p", self.dir, "-c", "${self.dir}/nginx.conf", "-g", "daemon off;"]
  version_command = [var.nginx, "-v"]

  file "nginx.conf" {
    template = file("templates/nginx.conf.tmpl")
    vars = {
      access_log = matrix.access_log
      workers    = var.workers
    }
  }
  file "hello" {
    content = "hello\n"
  }
  port "http" {}
  health {
    http = "/"
  }
}

# Process and kernel settings, restored after each trial. They need root;
# optional = true turns a refusal into a warning.
step "tune" "limits" {
  nofile       = 65535
  sysctl       = { "net.core.somaxconn" = "4096", "net.ipv4.tcp_max_syn_backlog" = "4096" }
  service_cpus = "1" # nginx on cpu 1 …
  loader_cpus  = "0" # … and the load generator on cpu 0
  optional     = true
}

step "check" "hello" {
  url           = "${service.nginx.url}/"
  body_contains = "hello"
}

step "warm" "nginx" {
  target      = "${service.nginx.url}/"
  connections = 32
  duration    = "1s"
}

step "load" "wrk" {
  target      = "${service.nginx.url}/"
  connections = 64
  threads     = 1
  duration    = var.duration
}

# CPU per process during the load: nginx (master and workers, as the local
# provider reports them) and the load generator itself.
step "collect" "cpu" {
  during   = step.load.wrk
  loader   = true
  interval = "1s"
}
