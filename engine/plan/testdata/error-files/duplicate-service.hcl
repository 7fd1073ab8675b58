pipeline "p" {}
service "web" {
  command = ["x"]
}
service "web" { # ERROR: Duplicate service
  command = ["y"]
}
