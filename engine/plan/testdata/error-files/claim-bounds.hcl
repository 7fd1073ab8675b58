pipeline "p" {}
matrix { size = ["1KiB", "1MiB"] }
service "web" {
  command = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}", "--size", matrix.size]
  port "http" {}
}
step "load" "main" {
  target   = service.web.url
  duration = "1s"
}
claim "unknown-metric" {
  metric = "p99_99_us" # ERROR: Unknown claim metric
  cell   = { size = "1KiB" }
  value  = "< 10ms"
}
claim "both" {
  metric = "rps"
  cell   = { size = "1KiB" }
  ratio  = "< 0.5"
  value  = "> 100" # ERROR: Both ratio and value
  versus = { size = "1MiB" }
}
claim "ratio-alone" {
  metric = "rps"
  cell   = { size = "1KiB" }
  ratio  = "< 0.5" # ERROR: Ratio without versus
}
claim "versus-with-value" {
  metric = "rps"
  cell   = { size = "1KiB" }
  versus = { size = "1MiB" } # ERROR: Versus without ratio
  value  = "> 100"
}
claim "bad-bound" {
  metric = "latency_p99_us"
  value  = "about 10ms" # ERROR: Invalid claim bound
}
claim "bad-ratio" {
  metric = "rps"
  cell   = { size = "1KiB" }
  versus = { size = "1MiB" }
  ratio  = "< -1" # ERROR: Invalid claim bound
}
claim "no-bound" { # ERROR: Missing claim bound
  metric = "rps"
}
claim "no-metric" { # ERROR: Missing claim metric
  cell = { size = "1KiB" }
}
claim "bad-verdict" {
  cell    = { size = "1KiB" }
  verdict = "cpu-bound" # ERROR: Unknown verdict
}
claim "verdict-and-metric" {
  cell    = { size = "1KiB" }
  metric  = "rps" # ERROR: Verdict claim with a bound
  verdict = "server-bound"
}
claim "same" {
  metric = "rps"
  cell   = { size = "1KiB" }
  versus = { size = "1KiB" } # ERROR: Versus selects the same cells
  ratio  = "< 1"
}
claim "cells-not-object" {
  metric = "rps"
  cell   = "size=1KiB" # ERROR: Invalid claim cells
  value  = "> 1"
}
claim "unknown-attribute" {
  metric = "rps"
  value  = "> 1"
  bound  = "> 2" # ERROR: Unsupported argument
}
claim "same" { # ERROR: Duplicate claim
  metric = "rps"
  value  = "> 1"
}
