pipeline "p" {
  busy_rerun = -1 # ERROR: Invalid busy_rerun
}
