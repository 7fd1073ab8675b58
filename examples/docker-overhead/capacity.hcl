# Study S1's deployments (docs: examples/docker-overhead/README.md) asked an
# operator's question: how much load does nginx carry on the host, in Docker
# behind NAT and in Docker on the host network while p99 stays under 10 ms?
# Each trial is a capacity search: open-loop probes at rising rates, judged
# against the SLO on corrected latency (docs/load.md, "Capacity under an SLO").
#
#   make images
#   benchflow apply examples/docker-overhead/capacity.hcl
#   benchflow report results/latest --baseline deploy=host
#
# Same nginx, nginx.conf and page as pipeline.hcl, access log off.

pipeline "docker-overhead-capacity" {
  description = "nginx: host vs docker NAT vs docker host network, capacity under p99<10ms (S1)"
  repetitions = 2
  order       = "interleaved"
}

variable "slo" {
  type        = string
  default     = "p99<10ms,errors<0.1%"
  description = "The SLO each probe is judged against."
}

variable "probe" {
  type        = string
  default     = "3s"
  description = "Length of each probe (its first second is not judged)."
}

variable "max_probes" {
  type    = number
  default = 14
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
  type        = number
  default     = 160
  description = "Open-loop connections (each keeps one request in flight: enough for rate × latency)."
}

variable "threads" {
  type    = number
  default = 2
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
  deploy = var.deploys
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
      # Capacity with the access log off: the log's cost is the main
      # pipeline's question.
      access_log = "off"
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

step "load" "capacity" {
  target      = "${service.nginx.url}/"
  headers     = local.headers
  connections = var.connections
  threads     = var.threads
  keepalive   = true
  search {
    slo        = var.slo
    start_rate = 1000
    probe      = var.probe
    max_probes = var.max_probes
  }
}

step "collect" "cpu" {
  during   = step.load.capacity
  loader   = true
  interval = "1s"
}
