pipeline "p" {
  description = "x"
  repetitions = = 3 # ERROR: Invalid expression
}
