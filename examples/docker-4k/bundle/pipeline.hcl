# Study S2 (see README.md): nginx serving one 4 KiB random file, tuned
# (worker count, CPU affinity, sendfile, tcp_nopush), on the host vs in
# Docker behind a published port (NAT through docker-proxy).
#
#   make images
#   benchflow apply examples/docker-4k/pipeline.hcl --var duration=5s
#   benchflow report results/latest --baseline deploy=host
#
# With a registry: --var image=nginx:alpine --var pull=missing

pipeline "docker-4k" {
  description = "nginx, one 4 KiB random file, tuned: host vs docker NAT (S2)"
  repetitions = 3
}

variable "duration" {
  type    = string
  default = "30s"
}

variable "image" {
  type    = string
  default = "benchflow/nginx:local"
}

variable "pull" {
  type    = string
  default = "never"
}

variable "workers" {
  type        = number
  default     = 1
  description = "worker_processes: the study used 5 on 6 cores (one left for the client)."
}

variable "service_cpus" {
  type        = string
  default     = "1"
  description = "CPUs for nginx (host: affinity of its processes; docker: the container's cpuset)."
}

variable "nofile" {
  type        = number
  default     = 16384
  description = "RLIMIT_NOFILE of nginx (this machine's hard limit is 20000; the study's hosts used 65535)."
}

variable "loader_cpus" {
  type    = string
  default = "0"
}

matrix {
  deploy = ["host", "docker-nat"]
}

provider "local" "host" {}

provider "docker" "docker-nat" {
  network = "bridge"
  pull    = var.pull
  cpuset  = var.service_cpus
  ulimits = { nofile = var.nofile }
}

service "nginx" {
  provider        = matrix.deploy
  image           = var.image
  command         = ["/usr/sbin/nginx", "-e", "stderr", "-c", "${self.dir}/nginx.conf", "-g", "daemon off;"]
  version_command = ["/usr/sbin/nginx", "-v"]

  file "nginx.conf" {
    template = file("templates/nginx.conf.tmpl")
    vars = {
      workers     = var.workers
      nofile      = var.nofile
      run_dir     = matrix.deploy == "host" ? self.dir : "/tmp"
      listen_addr = matrix.deploy == "docker-nat" ? "0.0.0.0" : "127.0.0.1"
    }
  }
  # dd if=/dev/urandom of=benchmark.bin bs=4K count=1, but the same bytes
  # in every trial and run.
  file "benchmark.bin" {
    random_bytes = "4KiB"
  }
  port "http" {
    container = 80
  }
  health {
    http = "/benchmark.bin"
  }
}

# The load generator on its own core, nginx on the others (host variant;
# the container is pinned by the provider's cpuset).
step "tune" "affinity" {
  loader_cpus  = var.loader_cpus
  service_cpus = var.service_cpus
  nofile       = var.nofile
  optional     = true
}

step "check" "file" {
  url       = "${service.nginx.url}/benchmark.bin"
  body_size = 4096
}

step "warm" "nginx" {
  target   = "${service.nginx.url}/benchmark.bin"
  duration = "2s"
}

# wrk -t4 -c160 -d30s
step "load" "wrk" {
  target      = "${service.nginx.url}/benchmark.bin"
  connections = 160
  threads     = 4
  duration    = var.duration
}

step "collect" "cpu" {
  during    = step.load.wrk
  # No process names: names match every process of the machine (other
  # containers' docker-proxy, other nginx). The providers report exactly
  # this trial's: the server's processes, and for docker the docker-proxy
  # of its port, dockerd and its containerd-shim.
  loader    = true
}

# The study's conclusion (S2), checked on every run (docs/language.md).
claim "container-costs-half" {
  description = "Behind a published port, the container serves less than half the host's req/s of the 4 KiB file"
  metric      = "rps"
  cell        = { deploy = "docker-nat" }
  versus      = { deploy = "host" }
  ratio       = "< 0.5"
}

# "Again docker-proxy the top CPU consumer": behind NAT, the infrastructure
# on the request path (docker-proxy, dockerd, containerd-shim) against
# nginx itself, trial by trial. Stated robustly (at least half as much;
# the study: more than nginx).
claim "proxy-rivals-nginx" {
  description   = "Behind a published port, docker-proxy and the engine spend at least half as much CPU as nginx itself (the study: docker-proxy the top consumer)"
  metric        = "cpu_infra_pct"
  versus_metric = "cpu_service_pct"
  cell          = { deploy = "docker-nat" }
  ratio         = "> 0.5"
}
