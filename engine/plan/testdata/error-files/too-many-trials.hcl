pipeline "p" {}
matrix { # ERROR: Too many trials
  a = range(1000)
  b = range(1000)
}
