pipeline "p" {}
step "load" "cap" {
  target = "http://127.0.0.1:1/"
  search {
    slo   = "p99<10ms"
    probe = "1s" # ERROR: Invalid search
  }
}
