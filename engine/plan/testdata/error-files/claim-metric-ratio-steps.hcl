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
  ratio         = "> 3"
}
claim "cpu-without-collect" {
  metric        = "cpu_service_pct"
  versus_metric = "cpu_infra_pct" # ERROR: Claim on a metric no step records
  ratio         = "> 1"
}
claim "capacity-without-search" {
  metric        = "rps"
  versus_metric = "capacity_rps" # ERROR: Claim on a metric no step records
  ratio         = "< 1"
}
