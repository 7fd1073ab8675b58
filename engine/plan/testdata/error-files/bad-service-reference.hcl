pipeline "p" {}
service "web" {
  command = ["x"]
}
step "load" "main" {
  target = service.wbe.url # ERROR: Reference to undeclared service
}
