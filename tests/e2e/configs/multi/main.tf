# tests/e2e/multi.sh: five provider instances (aliases) of two providers,
# each with many resources, applied in parallel.
terraform {
  required_providers {
    tftest5 = { source = "tftap/tftest5" }
    tftest6 = { source = "tftap/tftest6" }
  }
}
provider "tftest5" { label = "default5" }
provider "tftest5" {
  alias = "a"
  label = "a"
}
provider "tftest5" {
  alias = "b"
  label = "b"
}
provider "tftest6" { label = "default6" }
provider "tftest6" {
  alias = "x"
  label = "x"
  token = "secret-x"
}

resource "tftest5_pet" "d" {
  count  = 6
  length = count.index + 1
}
resource "tftest5_id" "a" {
  provider    = tftest5.a
  count       = 6
  byte_length = count.index + 4 # no id as short as a word of the configuration ("two", "four")
}
resource "tftest5_trigger" "b" {
  provider = tftest5.b
  count    = 6
  triggers = { pet = tftest5_pet.d[count.index].id }
}
resource "tftest6_thing" "d" {
  count       = 6
  int_attr    = count.index
  string_attr = tftest5_id.a[count.index].hex
}
resource "tftest6_thing" "x" {
  provider  = tftest6.x
  for_each  = toset(["one", "two", "three", "four"])
  string_attr = each.key
  secret      = "s-${each.key}"
  entries     = [{ key = each.key, value = "v" }]
}
