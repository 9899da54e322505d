# tests/e2e/mock.sh: applied under tftap, then tested with the mocks it wrote.
terraform {
  required_providers {
    tftest5 = { source = "tftap/tftest5" }
    tftest6   = { source = "tftap/tftest6" }
    tftestsdk = { source = "tftap/tftestsdk" }
  }
}
# Two instances of one type with different computed values.
resource "tftest5_id" "a" {
  byte_length = 4
}
resource "tftest5_id" "b" {
  byte_length = 8
}
# length and separator are optional and computed: not set here, so mockable.
resource "tftest5_pet" "p" {
  prefix = "mock"
}
# Protocol 6, a sensitive attribute and a nested block.
resource "tftest6_thing" "t" {
  string_attr = "kept"
  secret      = "s3cret-never-in-mocks"
  rule {
    name = "http"
    port = 80
  }
}
# terraform-plugin-sdk/v2 (legacy type system): id is optional and computed.
resource "tftestsdk_misbehave" "s" {
  rule = "none"
}
# The data source echoes its input as its computed result: strings HCL must
# escape and a number no float64 holds.
data "tftest5_echo" "e" {
  input = {
    s     = "q\"uote \\ back $${not} %%{nope} caf\u00e9\ttab\nnl"
    n     = 12345678901234567890.125
    "a b" = ["x", "y"]
  }
}
