pipeline "p" {}
step "load" "main" {
  target = "http://127.0.0.1:1/"
}
step "warm" "main" { # ERROR: Duplicate step
  target = "http://127.0.0.1:1/"
}
