pipeline "p" {}
service "web" {
  command = ["x"]
}
step "load" "main" {
  target     = "http://127.0.0.1:1/"
  conections = 10 # ERROR: Unsupported argument
}
