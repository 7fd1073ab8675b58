pipeline "p" {}
step "load" "main" {
  target    = "http://127.0.0.1:1/"
  busy_poll = "1s" # ERROR: Invalid busy_poll
}
