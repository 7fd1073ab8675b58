pipeline "p" {}
step "load" "main" {
  target      = "http://127.0.0.1:1/"
  connections = 4
  agents {
    count = 0 # ERROR: Invalid agent count
  }
}
