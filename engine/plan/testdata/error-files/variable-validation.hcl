pipeline "p" {}
variable "connections" {
  type    = number
  default = 0
  validation {
    condition     = var.connections > 0 # ERROR: Invalid value for variable
    error_message = "connections must be positive."
  }
}
