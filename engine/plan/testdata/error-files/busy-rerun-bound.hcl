pipeline "p" {
  busy_rerun = 11 # ERROR: Invalid busy_rerun
}
