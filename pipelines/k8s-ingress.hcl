# nginx behind a Kubernetes ingress controller, access log on vs off: the
# slowest variant of study S1 (Deployment + Service + Ingress on a single
# node, reached through the ingress controller from the benchflow host).
#
# Needs a cluster in the kubeconfig (kind, k3s, minikube, …) with an ingress
# controller answering on ingress_address, and the nginx:alpine image
# available to the node. docs/providers/k8s.md shows a kind setup, and the
# local test cluster (make cluster-up: Traefik serves class "nginx" there):
#
#   benchflow apply pipelines/k8s-ingress.hcl --var ingress_address=127.0.0.1:80
#   benchflow apply pipelines/k8s-ingress.hcl --var kubeconfig=/run/benchflow-cluster/admin.kubeconfig \
#     --var ingress_address=127.0.0.1:8081
#   benchflow report results/latest
#   benchflow render pipelines/k8s-ingress.hcl --provider k8s   # the manifests, no cluster needed
#
# Every trial creates the namespace benchflow-<run id>, a ConfigMap with
# nginx.conf, the Deployment, the Service and the Ingress, waits for the
# rollout, loads nginx through the ingress and deletes it all again.

pipeline "k8s-ingress" {
  description = "nginx:alpine on Kubernetes behind an ingress controller: access log on vs off"
  repetitions = 2
}

variable "duration" {
  type        = string
  default     = "10s"
  description = "How long each measured load runs (S1 used 30s)."
}

variable "connections" {
  type    = number
  default = 160
}

variable "kubeconfig" {
  type        = string
  default     = ""
  description = "Path of the kubeconfig; empty means $KUBECONFIG or ~/.kube/config."
}

variable "ingress_class" {
  type        = string
  default     = "nginx"
  description = "IngressClass of the controller (ingress-nginx installs \"nginx\")."
}

variable "ingress_address" {
  type        = string
  default     = "127.0.0.1:80"
  description = "host:port where the ingress controller answers from this host."
}

variable "ingress_host" {
  type        = string
  default     = ""
  description = "Host rule of the Ingress; empty matches every host. A name that does not resolve to ingress_address is only sent as the Host header."
}

matrix {
  access_log = ["on", "off"]
}

provider "k8s" "cluster" {
  kubeconfig      = var.kubeconfig
  expose          = "ingress"
  ingress_class   = var.ingress_class
  ingress_address = var.ingress_address
  ingress_host    = var.ingress_host
  ready_timeout   = "3m"
}

service "nginx" {
  provider = "cluster"
  image    = "nginx:alpine"

  # The files of a k8s service are one ConfigMap, mounted at self.dir
  # (/etc/benchflow); mount puts this one where the image expects it too.
  file "nginx.conf" {
    mount   = "/etc/nginx/nginx.conf"
    content = <<-EOT
      # benchflow trial ${trial.id}: access log ${matrix.access_log}
      worker_processes auto;
      error_log /dev/stderr warn;
      pid /tmp/nginx.pid;

      events {
          worker_connections 4096;
      }

      http {
          include /etc/nginx/mime.types;
          default_type application/octet-stream;
          sendfile on;
          tcp_nopush on;
          keepalive_requests 1000000;
          access_log ${matrix.access_log == "on" ? "/dev/stdout" : "off"};

          server {
              listen 80 reuseport;
              root /usr/share/nginx/html;
          }
      }
    EOT
  }

  port "http" {
    container = 80
  }
  health {
    http    = "/"
    timeout = "60s"
  }
}

step "check" "welcome" {
  url           = "${service.nginx.url}/"
  headers       = { Host = service.nginx.host_header }
  body_contains = "Welcome to nginx"
}

step "warm" "nginx" {
  target      = "${service.nginx.url}/"
  headers     = { Host = service.nginx.host_header }
  connections = var.connections
  threads     = 4
  duration    = "3s"
}

step "load" "wrk" {
  target      = "${service.nginx.url}/"
  headers     = { Host = service.nginx.host_header }
  connections = var.connections
  threads     = 4
  duration    = var.duration
  keepalive   = true
}

# CPU per process during the load. On a single-node cluster running on this
# host (kind, k3s, make cluster-up) the pods' processes are visible here:
# nginx (the service, and ingress-nginx's workers) and whichever ingress
# controller serves the class: nginx-ingress-controller (ingress-nginx) or
# traefik (the local test cluster's). A name that matches nothing is
# simply absent from the results.
step "collect" "cpu" {
  during    = step.load.wrk
  processes = ["nginx", "nginx-ingress-controller", "traefik"]
  loader    = true
  interval  = "1s"
}
