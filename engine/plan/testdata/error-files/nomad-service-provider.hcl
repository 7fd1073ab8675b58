pipeline "p" {}
provider "nomad" "cluster" {
  driver           = "raw_exec"
  service_provider = "nomda" # ERROR: Invalid provider setting
}
service "web" {
  provider = "cluster"
  command  = ["/usr/local/bin/benchflow", "serve", "--addr", "0.0.0.0:${self.port.http}"]
  port "http" {}
}
step "load" "main" {
  target   = "${service.web.url}/"
  requests = 10
}
