# tests/pg/many.sh: four providers (both tftest protocols, the SDKv2 one and
# provider-simple) and a chain of three resources that each hang in their
# apply until the test removes $TFTEST_HANG_MARKER, so that the test decides
# when calls happen while the database is away.
terraform {
  required_providers {
    simple    = { source = "tftap/simple" }
    tftest5   = { source = "tftap/tftest5" }
    tftest6   = { source = "tftap/tftest6" }
    tftestsdk = { source = "tftap/tftestsdk" }
  }
}
resource "simple_resource" "s" {
  value = "from-simple"
}
resource "tftest5_pet" "p" {
  count  = 3
  length = count.index + 1
}
resource "tftestsdk_misbehave" "x" {
  rule   = "none"
  value  = "a"
  hashed = "abc"
  list   = ["a"]
}
resource "tftest6_thing" "a" {
  string_attr = "a"
  fail        = "hang"
  depends_on  = [simple_resource.s, tftest5_pet.p, tftestsdk_misbehave.x]
}
resource "tftest6_thing" "b" {
  string_attr = tftest6_thing.a.id
  fail        = "hang"
}
resource "tftest6_thing" "c" {
  string_attr = tftest6_thing.b.id
  fail        = "hang"
}
