pipeline "p" {}
provider "local" "host" {
  stop_timeout = "soon"                     # ERROR: Invalid provider setting
  work_dir     = "/nonexistent/benchflow-x" # ERROR: Invalid provider setting
}
service "web" {
  provider = "host"
  command  = ["/usr/local/bin/benchflow", "serve", "--addr", "127.0.0.1:${self.port.http}"]
  port "http" {}
}
step "load" "main" {
  target   = "${service.web.url}/"
  requests = 10
}
