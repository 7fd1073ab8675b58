pipeline "sweep" {
  description    = "nginx: workers × access log × body size"
  repetitions    = 2
  order          = "random"
  seed           = 42
  on_failure     = "abort"
  reuse_services = true
}

variable "duration" {
  default = "2s"
}

variable "sizes" {
  type    = list(string)
  default = ["1KiB", "64KiB"]
}

locals {
  base    = "/srv"
  timeout = "3s"
}

matrix {
  workers    = [1, 2, 4]
  access_log = ["on", "off"]
  size       = var.sizes
  exclude    = [{ workers = 4, access_log = "on" }]
  include    = [{ workers = 8, access_log = "off", size = "1KiB" }]
}

provider "local" "host" {}
provider "docker" "nat" {
  network = "bridge"
}

service "nginx" {
  provider = matrix.workers > 2 ? "nat" : "host"
  image    = "nginx:alpine"
  command  = ["/usr/sbin/nginx", "-g", "daemon off;", "-c", "${self.dir}/nginx.conf"]
  env      = { WORKERS = "${matrix.workers}", MODE = "bench" }
  file "nginx.conf" {
    template = file("templates/nginx.conf.tmpl")
    vars     = { workers = matrix.workers, access_log = matrix.access_log }
  }
  file "body.bin" {
    random_bytes = matrix.size
  }
  port "http" {
    container = 80
  }
  health {
    http    = "/body.bin"
    timeout = local.timeout
  }
}

step "tune" "kernel" {
  sysctl   = { "net.core.somaxconn" = "4096" }
  nofile   = 65535
  optional = true
}

step "exec" "note" {
  command    = ["echo", "trial ${trial.id} on ${service.nginx.host}"]
  depends_on = [step.tune.kernel]
}

step "warm" "nginx" {
  target   = "${service.nginx.url}/body.bin"
  duration = "1s"
}

step "load" "mixed" {
  connections = 8 * 2
  threads     = 2
  duration    = var.duration
  rate        = 1000.5
  headers     = { "X-Size" = matrix.size }
  url {
    url    = "${service.nginx.url}/body.bin"
    weight = 3
  }
  url {
    url    = "${service.nginx.url}/missing"
    method = "HEAD"
  }
}

step "collect" "procs" {
  during    = step.load.mixed
  processes = ["nginx", "/docker-proxy/"]
  interval  = "250ms"
}

output {
  dir    = "out"
  format = "arrow"
}

claim "workers-scale" {
  description = "four workers serve at least 1.5 times what one does"
  metric      = "rps"
  cell        = { workers = 4 }
  versus      = { workers = 1 }
  ratio       = ">= 1.5"
}

claim "p99-bounded" {
  metric = "latency_p99_us"
  cell   = { workers = 2, size = "1KiB" }
  value  = "< 10ms"
}

claim "nat-is-infra" {
  cell    = { workers = 4 }
  verdict = "infrastructure-bound"
}

claim "long-tail" {
  description   = "a few requests take far longer: p99.99 at least 3 times p50"
  metric        = "latency_p9999_us"
  versus_metric = "latency_p50_us"
  cell          = { size = "64KiB" }
  ratio         = ">= 3"
}
