# A provider quoting a sensitive variable's value in its error: the
# framework's own error for a number that is not an integer says the value
# (the variable is text; core converts it to the attribute's number).
terraform {
  required_providers {
    tftest6 = { source = "tftap/tftest6" }
  }
}
variable "ratio" {
  type      = string
  sensitive = true
}
resource "tftest6_thing" "bad" { int_attr = var.ratio }
