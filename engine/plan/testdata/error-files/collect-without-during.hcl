pipeline "p" {}
step "collect" "cpu" { # ERROR: Missing required argument
  processes = ["nginx"]
}
