terraform {
  required_providers {
    tftest6 = { source = "tftap/tftest6" }
  }
}

# The only tftest6_id, in a module called once: certain.
resource "tftest6_id" "deep" {
  byte_length = 4
}
