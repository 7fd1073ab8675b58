pipeline "p" {}
locals {
  a = local.b # ERROR: Dependency cycle between local values
  b = local.a
}
