pipeline "p" {
  order = "interleave" # ERROR: Invalid trial order
}
