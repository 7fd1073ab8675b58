pipeline "p" {}
service "web" {
  command = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}"]
  port "http" {}
}
step "load" "small" {
  target   = service.web.url
  duration = "1s"
}
step "load" "big" {
  target   = service.web.url
  duration = "1s"
}
claim "which" { # ERROR: Ambiguous claim step
  metric = "rps"
  value  = "> 1"
}
claim "this-one" {
  metric = "rps"
  step   = "big"
  value  = "> 1"
}
