# Acceptance-test pipeline: nginx:alpine through a NodePort, one trial with a
# load of var.duration (the gc tests run it as a live run A and a second run B).
pipeline "acc-nodeport" {
  description = "nginx:alpine through a NodePort (acceptance tests)"
  repetitions = 1
}

variable "kubeconfig" {
  type    = string
  default = ""
}

variable "duration" {
  type    = string
  default = "2s"
}

provider "k8s" "cluster" {
  kubeconfig        = var.kubeconfig
  expose            = "nodeport"
  ready_timeout     = "2m"
  image_pull_policy = "Never"
  cpu               = "250m"
  memory            = "64Mi"
}

service "nginx" {
  provider = "cluster"
  image    = "nginx:alpine"
  file "nginx.conf" {
    mount   = "/etc/nginx/nginx.conf"
    content = <<-EOT
      worker_processes 1;
      error_log /dev/stderr warn;
      pid /tmp/nginx.pid;
      events { worker_connections 256; }
      http {
          access_log off;
          server { listen 80; root /usr/share/nginx/html; }
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

# Few connections and a request rate: a live run, not a load test.
step "load" "wrk" {
  target      = "${service.nginx.url}/"
  connections = 2
  threads     = 1
  rate        = 200
  duration    = var.duration
}
