pipeline "p" {}
matrix {
  size = ["1"]
}
step "load" "main" {
  target = "http://127.0.0.1:1/${matrix.sise}" # ERROR: Reference to undeclared matrix axis
}
