pipeline "p" {}
step "laod" "main" { # ERROR: Unknown step kind
  target = "http://127.0.0.1:1/"
}
