pipeline "p" {}
step "load" "main" {
  target = "http://127.0.0.1:1/"
  engine = "io_uring" # ERROR: Invalid engine
}
