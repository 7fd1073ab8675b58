pipeline "p" {}
step "load" "main" {
  target    = "http://127.0.0.1:1/"
  requests  = 1
  body_file = "no-such-body.json" # ERROR: Missing file
}
step "load" "scripted" {
  target   = "http://127.0.0.1:1/"
  requests = 1
  script   = "no-such-script.star" # ERROR: Missing file
}
