terraform {
  required_providers {
    tftest5 = { source = "tftap/tftest5" }
  }
}

variable "n" {
  type = number
}

resource "tftest5_pet" "x" {
  length = var.n + 6
}

module "leaf" {
  count  = 2
  source = "./leaf"
  tag    = "${var.n}-${count.index}"
}
