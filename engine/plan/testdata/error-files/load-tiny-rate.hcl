pipeline "p" {}
step "load" "tiny" {
  target   = "http://127.0.0.1:1/"
  rate     = 1e-12 # ERROR: Invalid rate
  interval = "1ns" # ERROR: Invalid interval
}
step "warm" "short-interval" {
  target   = "http://127.0.0.1:1/"
  interval = "9ms" # ERROR: Invalid interval
}
step "load" "many-intervals" {
  target   = "http://127.0.0.1:1/"
  duration = "2h"
  interval = "10ms" # ERROR: Invalid interval
}
