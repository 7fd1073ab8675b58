# ERROR: Missing pipeline block
step "load" "main" {
  target = "http://127.0.0.1:1/"
}
