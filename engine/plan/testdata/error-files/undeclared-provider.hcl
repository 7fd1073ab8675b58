pipeline "p" {}
provider "local" "host" {}
provider "local" "other" {}
service "web" {
  provider = "hots" # ERROR: Reference to undeclared provider
  command  = ["x"]
}
