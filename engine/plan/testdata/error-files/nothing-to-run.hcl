pipeline "p" {}
service "web" { # ERROR: Nothing to run
  port "http" {}
}
