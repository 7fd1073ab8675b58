pipeline "p" {}
locals {
  other = service.api.url
}
service "api" {
  command = ["x"]
}
service "web" {
  command = ["y", local.other] # ERROR: Invalid reference to a local value
}
