# tests/e2e/crash.sh: a healthy resource, then one whose provider fails on
# demand in the middle of its apply (var.fail, see tests/peers/tftest/thing.go).
terraform {
  required_providers {
    tftest5 = { source = "tftap/tftest5" }
    tftest6 = { source = "tftap/tftest6" }
  }
}
variable "fail" {
  type    = string
  default = ""
}
resource "tftest5_pet" "ok" {}
resource "tftest6_thing" "boom" {
  string_attr = tftest5_pet.ok.id
  fail        = var.fail
}
