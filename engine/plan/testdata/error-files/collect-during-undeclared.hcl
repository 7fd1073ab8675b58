pipeline "p" {}
step "load" "main" {
  target = "http://127.0.0.1:1/"
}
step "collect" "cpu" {
  during = step.load.mian # ERROR: Reference to undeclared step
}
