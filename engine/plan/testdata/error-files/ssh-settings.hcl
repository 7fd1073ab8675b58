pipeline "p" {}
provider "ssh" "server" {
  address      = "root@10.0.0.2"                # ERROR: Invalid provider setting
  port         = 70000                          # ERROR: Invalid provider setting
  known_hosts  = "/nonexistent/known_hosts"     # ERROR: Invalid provider setting
  dir          = "tmp"                          # ERROR: Invalid provider setting
  idle_timeout = "2s"                           # ERROR: Invalid provider setting
  stop_timeout = "soon"                         # ERROR: Invalid provider setting
}
service "web" {
  provider = "server"
  command  = ["/usr/sbin/nginx", "-g", "daemon off;"]
  port "http" { host = 8080 }
}
step "load" "main" {
  target   = "${service.web.url}/"
  requests = 10
}
