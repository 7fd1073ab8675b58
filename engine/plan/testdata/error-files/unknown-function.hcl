pipeline "p" {}
step "load" "main" {
  target = uper("http://127.0.0.1:1/") # ERROR: Call to unknown function
}
