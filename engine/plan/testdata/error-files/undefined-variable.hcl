pipeline "p" {}
variable "duration" { default = "1s" }
step "load" "main" {
  target   = "http://127.0.0.1:1/"
  duration = var.duraton # ERROR: Reference to undeclared input variable
}
