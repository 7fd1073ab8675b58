pipeline "p" {}
step "load" "main" {
  target = "http://127.0.0.1:1/"
  search { # ERROR: Unsupported with agents
    slo = "p99<10ms"
  }
  agents {
    count = 2
  }
}
