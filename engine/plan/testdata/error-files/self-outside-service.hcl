pipeline "p" {}
step "load" "main" {
  target = "http://127.0.0.1:${self.port.http}/" # ERROR: Invalid reference to self
}
