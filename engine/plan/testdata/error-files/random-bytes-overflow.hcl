pipeline "p" {}
service "web" {
  command = ["x"]
  file "big" { # ERROR: Invalid file
    random_bytes = "9999999999999999999999"
  }
}
