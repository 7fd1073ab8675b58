pipeline "p" {}
variable "paths" { default = ["direct"] }
matrix { path = var.paths }
locals { gateway = matrix.path == "gateway" }
service "web" {
  command = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}"]
  port "http" {}
}
step "load" "main" {
  target   = service.web.url
  duration = "1s"
}
claim "off" {
  enabled = contains(var.paths, "gateway")
  metric  = "rps"
  cell    = { path = "gateway" }
  value   = "> 1"
}
claim "per-cell" {
  enabled = matrix.path == "gateway" # ERROR: Invalid reference in claim enabled
  metric  = "rps"
  value   = "> 1"
}
claim "local" {
  enabled = local.gateway # ERROR: Invalid reference in claim enabled
  metric  = "rps"
  value   = "> 1"
}
claim "service" {
  enabled = service.web.url != "" # ERROR: Invalid reference in claim enabled
  metric  = "rps"
  value   = "> 1"
}
claim "string" {
  enabled = "yes" # ERROR: Invalid claim enabled
  metric  = "rps"
  value   = "> 1"
}
claim "null" {
  enabled = null # ERROR: Invalid claim enabled
  metric  = "rps"
  value   = "> 1"
}
claim "list" {
  enabled = var.paths # ERROR: Invalid claim enabled
  metric  = "rps"
  value   = "> 1"
}
claim "undeclared" {
  enabled = var.gateway # ERROR: Unsupported attribute
  metric  = "rps"
  value   = "> 1"
}
claim "off-typo" {
  enabled = false
  metric  = "rps"
  cell    = { pth = "gateway" } # ERROR: Unknown claim parameter
  value   = "> 1"
}
