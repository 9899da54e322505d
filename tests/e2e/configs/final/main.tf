# tests/e2e/final.sh: small enough to plan twenty times on a loaded machine,
# with calls of two providers (two protocols) to record each time.
terraform {
  required_providers {
    tftest5 = { source = "tftap/tftest5", version = "0.1.0" }
    tftest6 = { source = "tftap/tftest6", version = "0.1.0" }
  }
}

resource "tftest5_pet" "a" {
  length = 2
}

resource "tftest5_id" "b" {
  byte_length = 4
}

resource "tftest6_thing" "c" {
  string_attr = "final"
}
