pipeline "p" {}
step "warm" "w" {
  target = "http://127.0.0.1:1/"
  search { # ERROR: Search outside a load step
    slo = "p99<10ms"
  }
}
