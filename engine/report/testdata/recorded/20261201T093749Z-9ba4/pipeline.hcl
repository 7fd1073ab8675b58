# Recorded for engine/report tests: benchflow serve, 2 sizes × 5 rounds.
pipeline "recorded" {
  description = "benchflow serve on loopback: 6 B vs 4 KiB bodies, 5 interleaved rounds"
  repetitions = 5
}

matrix {
  size = ["6", "4KiB"]
}

provider "local" "host" {}

service "web" {
  provider = "host"
  command  = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}", "--size", matrix.size]
  port "http" {}
  health {
    http    = "/"
    timeout = "10s"
  }
}

step "load" "main" {
  target      = "${service.web.url}/"
  connections = 8
  threads     = 1
  duration    = "2s"
}
