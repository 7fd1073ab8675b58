pipeline "p" {}
step "load" "main" { # ERROR: Missing target
  connections = 4
}
