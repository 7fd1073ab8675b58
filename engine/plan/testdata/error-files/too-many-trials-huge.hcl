pipeline "p" {
  repetitions = 10
}
matrix { # ERROR: Too many trials
  a = range(1000)
  b = range(1000)
  c = range(1000)
  d = range(1000)
}
