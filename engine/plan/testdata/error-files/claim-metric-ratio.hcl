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
claim "tail-ok" {
  metric        = "latency_p9999_us"
  versus_metric = "latency_p50_us"
  cell          = { size = "1MiB" }
  ratio         = "> 3"
}
claim "tail-everywhere-ok" {
  metric        = "latency_p99_us"
  versus_metric = "latency_p50_us"
  ratio         = "< 100"
}
claim "unknown-versus-metric" {
  metric        = "latency_p9999_us"
  versus_metric = "latency_p5_us" # ERROR: Unknown claim metric
  ratio         = "> 3"
}
claim "with-versus" {
  metric        = "latency_p99_us"
  cell          = { size = "1KiB" }
  versus        = { size = "1MiB" }
  versus_metric = "latency_p50_us" # ERROR: Both versus and versus_metric
  ratio         = "> 3"
}
claim "with-value" {
  metric        = "latency_p99_us"
  versus_metric = "latency_p50_us" # ERROR: Versus metric without ratio
  value         = "> 3"
}
claim "without-ratio" {
  metric        = "latency_p99_us"
  versus_metric = "latency_p50_us" # ERROR: Versus metric without ratio
}
claim "itself" {
  metric        = "latency_p99_us"
  versus_metric = "latency_p99_us" # ERROR: Versus metric is the metric
  ratio         = "> 3"
}
claim "other-unit" {
  metric        = "rps"
  versus_metric = "latency_p50_us" # ERROR: Versus metric in another unit
  ratio         = "> 3"
}
claim "bad-ratio" {
  metric        = "latency_p99_us"
  versus_metric = "latency_p50_us"
  ratio         = "3 times" # ERROR: Invalid claim bound
}
claim "verdict-and-pair" {
  cell          = { size = "1KiB" }
  versus_metric = "latency_p50_us" # ERROR: Verdict claim with a bound
  verdict       = "server-bound"
}
