pipeline "p" {}
service "web" {
  command = ["x"]
}
step "provision" "p" {
  services = ["nosuch"] # ERROR: Reference to undeclared service
}
step "tune" "t" {
  services = ["web", "nosuch2"] # ERROR: Reference to undeclared service
  optional = true
}
step "load" "l" {
  target   = "http://127.0.0.1:1/"
  requests = 1
}
step "collect" "c" {
  during   = step.load.l
  services = ["nope"] # ERROR: Reference to undeclared service
}
