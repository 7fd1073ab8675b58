# Study S1 (docs: examples/docker-overhead/README.md): the same nginx and the
# same nginx.conf on the host, in Docker behind published-port NAT
# (docker-proxy), and in Docker on the host network; access log on and off.
#
#   make images          # builds benchflow/nginx:local (no registry needed)
#   benchflow apply examples/docker-overhead/pipeline.hcl --var duration=5s
#   benchflow report results/latest --baseline deploy=host
#
# With a registry, use the official image instead:
#   --var image=nginx:alpine --var pull=missing

pipeline "docker-overhead" {
  description = "nginx: host vs docker NAT vs docker host network, access log on/off (S1)"
  repetitions = 3
  order       = "interleaved"
}

variable "duration" {
  type        = string
  default     = "30s"
  description = "Length of each measured load (the study used 30s)."
}

variable "image" {
  type        = string
  default     = "benchflow/nginx:local"
  description = "nginx image for the docker variants (nginx:alpine with a registry)."
}

variable "pull" {
  type        = string
  default     = "never"
  description = "Pull policy: never for the local images, missing with a registry."
}

variable "workers" {
  type        = number
  default     = 1
  description = "nginx worker_processes (leave a core for the load generator)."
}

variable "connections" {
  type    = number
  default = 160
}

variable "threads" {
  type    = number
  default = 4
}

variable "deploys" {
  type        = list(string)
  default     = ["host", "docker-nat", "docker-host"]
  description = "Deployment variants; add \"k8s-ingress\" on a machine with a Kubernetes cluster and an ingress controller."
}

variable "ingress_address" {
  type        = string
  default     = "127.0.0.1:80"
  description = "Where the cluster's ingress controller answers (k8s-ingress variant)."
}

variable "kubeconfig" {
  type        = string
  default     = ""
  description = "kubeconfig of the cluster (k8s-ingress variant); empty means $KUBECONFIG or ~/.kube/config."
}

matrix {
  deploy     = var.deploys
  access_log = ["on", "off"]
}

provider "local" "host" {}

# Published port on 127.0.0.1: load goes through docker-proxy (and the
# iptables DNAT rules) into the container's network namespace.
provider "docker" "docker-nat" {
  network = "bridge"
  pull    = var.pull
}

# --net=host: no proxy, no NAT; nginx listens on the host port itself.
provider "docker" "docker-host" {
  network = "host"
  pull    = var.pull
}

# Study S1's fourth variant: a Deployment + Service + Ingress on a
# (single-node) cluster, loaded through the ingress controller. Used only
# when --var 'deploys=["host","docker-nat","docker-host","k8s-ingress"]'.
provider "k8s" "k8s-ingress" {
  kubeconfig      = var.kubeconfig
  expose          = "ingress"
  ingress_class   = "nginx"
  ingress_address = var.ingress_address
}

service "nginx" {
  provider = matrix.deploy
  image    = var.image
  # The same argv in all three variants; self.dir is the rendered files
  # folder (mounted read-only at /etc/benchflow in containers).
  command         = ["/usr/sbin/nginx", "-e", "stderr", "-c", "${self.dir}/nginx.conf", "-g", "daemon off;"]
  version_command = ["/usr/sbin/nginx", "-v"]

  file "nginx.conf" {
    template = file("templates/nginx.conf.tmpl")
    vars = {
      workers = var.workers
      # In a container the access log goes to its stdout, as with the
      # official image (the log driver then writes it through dockerd);
      # on the host to a file.
      access_log = matrix.access_log == "off" ? "off" : (matrix.deploy == "host" ? "${self.dir}/access.log" : "/dev/stdout")
      # The files folder is read-only inside containers.
      run_dir = matrix.deploy == "host" ? self.dir : "/tmp"
      # Behind NAT nginx must accept on the container's interface;
      # otherwise loopback only: a benchmark target is never exposed.
      listen_addr = contains(["docker-nat", "k8s-ingress"], matrix.deploy) ? "0.0.0.0" : "127.0.0.1"
    }
  }
  file "index.html" {
    source = "index.html" # nginx's 615-byte welcome page
  }
  port "http" {
    container = 80
  }
  health {
    http = "/"
  }
}

locals {
  # The ingress routes by name; other variants need no Host header.
  headers = matrix.deploy == "k8s-ingress" ? { Host = service.nginx.host_header } : tomap({})
}

step "check" "page" {
  url       = "${service.nginx.url}/"
  headers   = local.headers
  body_size = 615
}

step "warm" "nginx" {
  target      = "${service.nginx.url}/"
  headers     = local.headers
  connections = 32
  duration    = "2s"
}

# wrk -t4 -c160 -d30s, keep-alive.
step "load" "wrk" {
  target      = "${service.nginx.url}/"
  headers     = local.headers
  connections = var.connections
  threads     = var.threads
  duration    = var.duration
  keepalive   = true
}

# CPU per process during the load, as the study reported it.
step "collect" "cpu" {
  during    = step.load.wrk
  # No process names: names match every process of the machine (other
  # containers' docker-proxy, other nginx). The providers report exactly
  # this trial's: the server's processes, and for docker the docker-proxy
  # of its port, dockerd and its containerd-shim.
  loader    = true
  interval  = "1s"
}

# The study's conclusions (../../../shared/studies.md, S1), checked on every
# run (docs/language.md, "claim"). On a machine whose Docker uses
# fuse-overlayfs or is otherwise far from the study's, some will not hold:
# `benchflow reproduce` names the environment fields that differ.
claim "nat-costs-half" {
  description = "Docker NAT (docker-proxy) delivers at most 60% of the host's req/s"
  metric      = "rps"
  cell        = { deploy = "docker-nat" }
  versus      = { deploy = "host" }
  ratio       = "< 0.6"
}

claim "nat-is-the-proxy" {
  description = "Behind NAT the infrastructure (docker-proxy, dockerd), not nginx, limits the req/s"
  cell        = { deploy = "docker-nat" }
  verdict     = "infrastructure-bound"
}

claim "container-log-costs" {
  description = "Logging to the container's terminal costs more than 30% of the req/s on the host network"
  metric      = "rps"
  cell        = { deploy = "docker-host", access_log = "on" }
  versus      = { access_log = "off" }
  ratio       = "< 0.7"
}
