pipeline "p" {}
step "exec" "a" { # ERROR: Dependency cycle between steps
  command    = ["true"]
  depends_on = [step.exec.b]
}
step "exec" "b" {
  command    = ["true"]
  depends_on = [step.exec.a]
}
