# tests/e2e/bundle.sh: sensitive values in provider configuration, in
# resource attributes (two equal ones) and in a nested attribute.
terraform {
  required_providers {
    tftest5 = { source = "tftap/tftest5" }
    tftest6 = { source = "tftap/tftest6" }
  }
}

provider "tftest6" {
  label = "bundle"
  token = "tok-Q7ZBUNDLETOKEN"
}

variable "suffix" {
  type    = string
  default = "1"
}

resource "tftest5_pet" "p" {
  length = 2
}

resource "tftest6_thing" "a" {
  string_attr = "a-${var.suffix}"
  secret      = "hunter2-Q7ZBUNDLESECRET"
  entries     = [{ key = "k", value = "nested-Q7ZBUNDLENESTED" }]
}

resource "tftest6_thing" "b" {
  string_attr = tftest5_pet.p.id
  secret      = "hunter2-Q7ZBUNDLESECRET"
}
