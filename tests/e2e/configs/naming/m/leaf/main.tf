terraform {
  required_providers {
    tftest5 = { source = "tftap/tftest5" }
  }
}

variable "tag" {
  type = string
}

resource "tftest5_pet" "y" {
  prefix = var.tag == "0-1" ? null : var.tag
}
