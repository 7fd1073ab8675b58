pipeline "p" {}
step "load" "main" {
  target      = "http://127.0.0.1:1/"
  connections = 2000000 # ERROR: Invalid connections
  threads     = 5000 # ERROR: Invalid threads
  requests    = -1 # ERROR: Invalid requests
  rate        = -5 # ERROR: Invalid rate
}
