pipeline "p" {}
variable "n" {
  type    = number
  default = "lots" # ERROR: Invalid default value for variable
}
