pipeline "p" {}
step "tune" "cpus" {
  loader_cpus = "0-x" # ERROR: Invalid CPU list
}
