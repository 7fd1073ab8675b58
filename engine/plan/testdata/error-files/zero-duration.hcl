pipeline "p" {}
step "load" "main" {
  target   = "http://127.0.0.1:1/"
  duration = "0s" # ERROR: Invalid duration
}
