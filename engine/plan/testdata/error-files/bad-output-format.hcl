pipeline "p" {}
output {
  format = "csv" # ERROR: Invalid output format
}
