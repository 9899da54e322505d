# tests/e2e/interrupt.sh: one resource applies, the next hangs in its apply
# (telling the test through $TFTEST_HANG_MARKER) until tofu cancels it.
terraform {
  required_providers {
    tftest5 = { source = "tftap/tftest5" }
    tftest6 = { source = "tftap/tftest6" }
  }
}
resource "tftest5_pet" "first" {}
resource "tftest6_thing" "hang" {
  string_attr = tftest5_pet.first.id
  fail        = "hang"
}
