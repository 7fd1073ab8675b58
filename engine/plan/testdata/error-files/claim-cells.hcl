pipeline "p" {}
matrix {
  size    = ["1KiB", "1MiB"]
  deploy  = ["host", "nat"]
  exclude = [{ size = "1MiB", deploy = "nat" }]
}
service "web" {
  command = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}", "--size", matrix.size]
  port "http" {}
}
step "load" "main" {
  target   = service.web.url
  duration = "1s"
}
claim "unknown-axis" {
  metric = "rps"
  cell   = { sise = "1KiB" } # ERROR: Unknown claim parameter
  value  = "> 1"
}
claim "unknown-value" {
  metric = "rps"
  cell   = { size = "4KiB" } # ERROR: No cell matches the claim
  value  = "> 1"
}
claim "excluded" {
  metric = "rps"
  cell   = { size = "1MiB", deploy = "nat" } # ERROR: No cell matches the claim
  value  = "> 1"
}
claim "no-versus-cell" {
  metric = "rps"
  cell   = { deploy = "host" }
  versus = { deploy = "nat" } # ERROR: No versus cell
  ratio  = "< 1"
}
claim "cpu-without-collect" {
  metric = "cpu_infra_pct" # ERROR: Claim on a metric no step records
  value  = "< 50%"
}
claim "capacity-without-search" {
  metric = "capacity_rps" # ERROR: Claim on a metric no step records
  value  = "> 1000"
}
claim "unknown-step" {
  metric = "rps"
  step   = "other" # ERROR: Unknown claim step
  value  = "> 1"
}
