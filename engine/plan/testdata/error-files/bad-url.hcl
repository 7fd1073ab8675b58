pipeline "p" {}
step "load" "main" {
  target = "ftp://127.0.0.1/" # ERROR: Invalid URL
}
