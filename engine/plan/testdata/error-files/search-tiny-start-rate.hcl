pipeline "p" {}
step "load" "cap" {
  target = "http://127.0.0.1:1/"
  search {
    slo        = "p99<10ms"
    start_rate = 1e-12 # ERROR: Invalid search
  }
}
step "load" "cap2" {
  target = "http://127.0.0.1:1/"
  search {
    slo      = "p99<10ms"
    max_rate = 0.5 # ERROR: Invalid search
  }
}
