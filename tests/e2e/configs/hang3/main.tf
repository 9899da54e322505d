# tests/e2e/diskfull.sh: three applies in a row, each hanging (telling the
# test through $TFTEST_HANG_MARKER) until the test removes the marker.
terraform {
  required_providers {
    tftest6 = { source = "tftap/tftest6" }
  }
}
resource "tftest6_thing" "a" {
  string_attr = "a"
  fail        = "hang"
}
resource "tftest6_thing" "b" {
  string_attr = tftest6_thing.a.id
  fail        = "hang"
}
resource "tftest6_thing" "c" {
  string_attr = tftest6_thing.b.id
  fail        = "hang"
}
