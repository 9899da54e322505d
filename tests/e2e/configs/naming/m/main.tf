terraform {
  required_providers {
    tftest5 = { source = "tftap/tftest5" }
    tftest6 = { source = "tftap/tftest6" }
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

# The only tftest6_echo, but in a module called twice: not certain.
data "tftest6_echo" "d" {
  input = var.n
}
