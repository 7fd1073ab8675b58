pipeline "p" {}
provider "docker" "box" {}
step "load" "main" {
  target = "http://127.0.0.1:1/"
  agents {
    provider = "box" # ERROR: Provider cannot run agents
    count    = 2
  }
}
