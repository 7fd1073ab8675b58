pipeline "p" {}
matrix {
  size = ["1", 2, true] # ERROR: Mixed matrix value types
}
