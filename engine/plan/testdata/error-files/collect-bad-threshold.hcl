pipeline "p" {}
step "load" "main" {
  target   = "http://127.0.0.1:1/"
  duration = "1s"
}
step "collect" "cpu" {
  during    = step.load.main
  threshold = -1 # ERROR: Invalid threshold
}
