pipeline "p" {}
step "warm" "w" {
  target = "http://127.0.0.1:1/"
  until  = "stable" # ERROR: Invalid until
}
step "warm" "x" {
  target    = "http://127.0.0.1:1/"
  until     = "steady"
  duration  = "10s"
  tolerance = "lots" # ERROR: Invalid tolerance
}
step "warm" "y" {
  target   = "http://127.0.0.1:1/"
  until    = "steady"
  duration = "2s"
  window   = "1s" # ERROR: Window too long
}
step "load" "z" {
  target = "http://127.0.0.1:1/"
  until  = "steady" # ERROR: until on a load step
}
step "warm" "v" {
  target = "http://127.0.0.1:1/"
  window = "1s" # ERROR: Setting needs until
}
