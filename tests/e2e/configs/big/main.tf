# Big values (tests/e2e/bigvalue.sh): keepers read from files the test
# writes, 64 MiB and 8 MiB, applied in parallel. A plan's request carries
# each value twice (config and proposed state), an apply's twice as well.
terraform {
  required_providers {
    tftest5 = {
      source  = "tftap/tftest5"
      version = "0.1.0"
    }
  }
}

resource "tftest5_pet" "big" {
  keepers = { big = file("${path.module}/big.txt") }
}

resource "tftest5_pet" "mid" {
  keepers = { mid = file("${path.module}/mid.txt") }
}
