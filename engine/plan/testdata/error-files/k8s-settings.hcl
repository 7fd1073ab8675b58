pipeline "p" {}
provider "k8s" "cluster" {
  expose            = "ingres"    # ERROR: Invalid provider setting
  service_type      = "nodeprot"  # ERROR: Invalid provider setting
  node_address      = "10.0.0.1"  # ERROR: Invalid provider setting
  replicas          = -1          # ERROR: Invalid provider setting
  ready_timeout     = "soon"      # ERROR: Invalid provider setting
  image_pull_policy = "always"    # ERROR: Invalid provider setting
  files_dir         = "etc/bench" # ERROR: Invalid provider setting
}
service "web" {
  provider = "cluster"
  image    = "nginx:alpine"
  port "http" { container = 80 }
}
step "load" "main" {
  target   = "${service.web.url}/"
  requests = 10
}
