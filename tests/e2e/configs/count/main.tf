# tests/e2e/count.sh: instances nothing but their index or key tells apart.
# Their ids are random words, long enough that two colliding (and so tied
# once applied) is one chance in millions: of 2 words, 3 in 600.
terraform {
  required_providers {
    tftest5 = { source = "tftap/tftest5" }
  }
}

resource "tftest5_pet" "web" {
  count  = 3
  length = 5
}

resource "tftest5_pet" "keyed" {
  for_each = toset(["a", "b"])
  length   = 6
}

resource "tftest5_pet" "single" {
  length = 4
}
