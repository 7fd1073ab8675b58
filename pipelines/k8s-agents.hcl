# nginx on Kubernetes, loaded from inside the cluster by load agents running
# as pods, their results merged exactly (docs/distributed.md).
#
# Needs a cluster in the kubeconfig with the nginx:alpine image and the
# agent image (benchflow/agent:local, built by `make images`; the local test
# cluster of `make cluster-up` imports both):
#
#   benchflow apply pipelines/k8s-agents.hcl --var kubeconfig=/run/benchflow-cluster/admin.kubeconfig
#
# Each trial creates nginx (Deployment + Service) in the namespace
# benchflow-<run id>, then two agent pods that load nginx through its
# Service (service.nginx.cluster_url), reached from here by port-forward;
# everything is deleted again, the agents' logs kept under logs/.

pipeline "k8s-agents" {
  description = "nginx:alpine on Kubernetes, loaded by agent pods in the cluster"
  repetitions = 1
}

variable "duration" {
  type    = string
  default = "5s"
}

variable "agents" {
  type    = number
  default = 2
}

variable "kubeconfig" {
  type        = string
  default     = ""
  description = "Path of the kubeconfig; empty means $KUBECONFIG or ~/.kube/config."
}

variable "agent_image" {
  type    = string
  default = "benchflow/agent:local"
}

provider "k8s" "cluster" {
  kubeconfig    = var.kubeconfig
  ready_timeout = "3m"
}

service "nginx" {
  provider = "cluster"
  image    = "nginx:alpine"
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
  body_contains = "Welcome to nginx"
}

step "load" "wrk" {
  target      = "${service.nginx.cluster_url}/"
  connections = 16
  threads     = 2
  duration    = var.duration

  agents {
    provider = "cluster"
    count    = var.agents
    image    = var.agent_image
  }
}
