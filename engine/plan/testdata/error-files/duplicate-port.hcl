pipeline "p" {}
service "web" {
  command = ["x"]
  port "http" {}
  port "http" { # ERROR: Duplicate port
    host = "8080"
  }
}
