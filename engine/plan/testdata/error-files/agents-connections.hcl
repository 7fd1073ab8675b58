pipeline "p" {}
step "load" "main" {
  target      = "http://127.0.0.1:1/"
  connections = 2
  agents {
    count = 3 # ERROR: Too few connections for the agents
  }
}
