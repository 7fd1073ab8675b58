pipeline "p" {}
matrix {
  size = [] # ERROR: Empty matrix axis
}
