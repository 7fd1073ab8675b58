pipeline "p" {}
step "load" "main" {
  target = "http://127.0.0.1:1/"
  nap    = "20us" # ERROR: Invalid nap
}
step "load" "h2" {
  target   = "http://127.0.0.1:1/"
  protocol = "h2"
  streams  = 8
  rate     = 100
  nap      = "20us" # ERROR: Invalid nap
}
step "load" "fine" {
  target   = "http://127.0.0.1:1/"
  protocol = "h2"
  streams  = 8
  nap      = "50us"
}
