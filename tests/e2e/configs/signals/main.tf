# tests/e2e/signals.sh: thirty resources created at once, and one that hangs
# in its apply (telling the test through $TFTEST_HANG_MARKER) until tofu
# cancels it ("hang") or the test releases it ("stubborn"), so that the test
# signals while tofu has created some resources and still works on others.
terraform {
  required_providers {
    tftest5 = { source = "tftap/tftest5" }
    tftest6 = { source = "tftap/tftest6" }
  }
}
variable "fail" {
  type    = string
  default = "hang"
}
resource "tftest5_pet" "p" {
  count  = 30
  length = 2
}
resource "tftest6_thing" "hang" {
  string_attr = tftest5_pet.p[0].id
  fail        = var.fail
}
