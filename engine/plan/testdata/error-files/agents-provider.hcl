pipeline "p" {}
provider "local" "host" {}
provider "docker" "box" {}
step "load" "main" {
  target = "http://127.0.0.1:1/"
  agents {
    provider = "hots" # ERROR: Reference to undeclared provider
    count    = 2
  }
}
