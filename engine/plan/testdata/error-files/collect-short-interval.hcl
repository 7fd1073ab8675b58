pipeline "p" {}
step "load" "main" {
  target   = "http://127.0.0.1:1/"
  duration = "1s"
}
step "collect" "cpu" {
  during   = step.load.main
  interval = "1ns" # ERROR: Invalid interval
}
step "collect" "mem" {
  during   = step.load.main
  interval = "9ms" # ERROR: Invalid interval
}
