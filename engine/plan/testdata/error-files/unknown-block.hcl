pipeline "p" {}
servce "web" { # ERROR: Unsupported block type
  command = ["true"]
}
