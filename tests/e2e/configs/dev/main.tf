# tests/e2e/wrap.sh: a provider the user runs through their own
# dev_overrides (OpenTofu's provider-simple) next to mirror-installed ones.
terraform {
  required_providers {
    simple  = { source = "tftap/simple" }
    tftest5 = { source = "tftap/tftest5" }
  }
}
resource "simple_resource" "s" {
  value = "from-simple"
}
resource "tftest5_pet" "p" {
  prefix = simple_resource.s.value
}
