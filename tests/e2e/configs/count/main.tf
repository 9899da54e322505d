# tests/e2e/count.sh: instances nothing but their index or key tells apart.
terraform {
  required_providers {
    tftest5 = { source = "tftap/tftest5" }
  }
}

resource "tftest5_pet" "web" {
  count  = 3
  length = 2
}

resource "tftest5_pet" "keyed" {
  for_each = toset(["a", "b"])
  length   = 3
}

resource "tftest5_pet" "single" {
  length = 4
}
