pipeline "p" {}
matrix {
  size    = ["1", "2"]
  exclude = [{ sizes = "1" }] # ERROR: Unknown matrix axis
}
