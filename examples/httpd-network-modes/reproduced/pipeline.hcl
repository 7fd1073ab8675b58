# Study S4 (see README.md): Apache httpd with its default settings on the
# host, in Docker on the host network, and in Docker behind NAT; an ab-like
# closed loop with keep-alive and a fixed request count (ab -c 100 -n N -k).
#
#   make images
#   benchflow apply examples/httpd-network-modes/pipeline.hcl --var requests=20000
#   benchflow report results/latest --baseline deploy=host
#
# With a registry (official image, whose paths differ from Debian's):
#   --var image=httpd:2.4 --var pull=missing \
#   --var httpd=/usr/local/apache2/bin/httpd --var modules=/usr/local/apache2/modules
# (the host variant keeps using Debian's /usr/sbin/apache2 through host_httpd).

pipeline "httpd-network-modes" {
  description = "Apache httpd: host vs docker host network vs docker NAT, ab -k (S4)"
  repetitions = 3
}

variable "requests" {
  type        = number
  default     = 1000000
  description = "Requests per trial (ab -n); the study used 1,000,000."
}

variable "connections" {
  type    = number
  default = 100
}

variable "image" {
  type    = string
  default = "benchflow/httpd:local"
}

variable "pull" {
  type    = string
  default = "never"
}

variable "httpd" {
  type        = string
  default     = "/usr/sbin/apache2"
  description = "httpd binary inside the image."
}

variable "host_httpd" {
  type        = string
  default     = "/usr/sbin/apache2"
  description = "httpd binary on the host (Debian package apache2)."
}

variable "modules" {
  type        = string
  default     = "/usr/lib/apache2/modules"
  description = "Folder of httpd's loadable modules (same on the host and in the local image)."
}

matrix {
  deploy = ["host", "docker-host", "docker-nat"]
}

provider "local" "host" {}

provider "docker" "docker-host" {
  network = "host"
  pull    = var.pull
}

provider "docker" "docker-nat" {
  network = "bridge"
  pull    = var.pull
}

service "httpd" {
  provider        = matrix.deploy
  image           = var.image
  command         = [matrix.deploy == "host" ? var.host_httpd : var.httpd, "-f", "${self.dir}/httpd.conf", "-DFOREGROUND"]
  version_command = [var.host_httpd, "-v"]

  file "httpd.conf" {
    template = file("templates/httpd.conf.tmpl")
    vars = {
      modules     = var.modules
      run_dir     = matrix.deploy == "host" ? self.dir : "/tmp"
      listen_addr = matrix.deploy == "docker-nat" ? "0.0.0.0" : "127.0.0.1"
    }
  }
  file "index.html" {
    content = "<html><body><h1>It works!</h1></body></html>\n"
  }
  port "http" {
    container = 80
  }
  health {
    http = "/"
  }
}

step "check" "page" {
  url           = "${service.httpd.url}/"
  body_contains = "It works!"
}

step "warm" "httpd" {
  target      = "${service.httpd.url}/"
  connections = var.connections
  requests    = 5000
}

# ab -c 100 -n 1000000 -k: closed loop, keep-alive, fixed request count.
step "load" "ab" {
  target      = "${service.httpd.url}/"
  connections = var.connections
  threads     = 1
  requests    = var.requests
  duration    = "10m"
  keepalive   = true
}

step "collect" "cpu" {
  during    = step.load.ab
  # No process names: names match every process of the machine (other
  # containers' docker-proxy, other nginx). The providers report exactly
  # this trial's: the server's processes, and for docker the docker-proxy
  # of its port, dockerd and its containerd-shim.
  loader    = true
}

# The study's conclusions (S4), checked on every run (docs/language.md).
claim "nat-loses" {
  description = "Docker NAT loses more than 10% of the host's req/s (the study: about 17%)"
  metric      = "rps"
  cell        = { deploy = "docker-nat" }
  versus      = { deploy = "host" }
  ratio       = "< 0.9"
}

claim "host-network-near-host" {
  description = "Docker on the host network keeps more than 90% of the host's req/s (the study: 94%)"
  metric      = "rps"
  cell        = { deploy = "docker-host" }
  versus      = { deploy = "host" }
  ratio       = "> 0.9"
}
