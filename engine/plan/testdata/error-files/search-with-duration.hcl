pipeline "p" {}
step "load" "cap" {
  target   = "http://127.0.0.1:1/"
  duration = "30s" # ERROR: Conflicting duration
  search {
    slo = "p99<10ms"
  }
}
