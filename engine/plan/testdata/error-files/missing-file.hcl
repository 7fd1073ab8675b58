pipeline "p" {}
service "web" {
  command = ["x"]
  file "a.conf" {
    template = file("missing.tmpl") # ERROR: Error in function call
  }
}
