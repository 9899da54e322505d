# tests/e2e/failures.sh: two resources whose apply fails on demand (var.fail_a,
# var.fail_b; see tests/peers/tftest/thing.go), one replaced on demand
# (var.prefix forces replacement) whose map the provider encodes in Go's
# order, where the CLI prints it sorted.
terraform {
  required_providers {
    tftest5 = { source = "tftap/tftest5" }
    tftest6 = { source = "tftap/tftest6" }
  }
}
variable "fail_a" {
  type    = string
  default = ""
}
variable "fail_b" {
  type    = string
  default = ""
}
variable "label" {
  type    = string
  default = "one"
}
variable "prefix" {
  type    = string
  default = "p1"
}
variable "others" {
  type    = bool
  default = true
}
resource "tftest6_thing" "a" {
  string_attr = "a-${var.label}"
  fail        = var.fail_a
}
resource "tftest6_thing" "b" {
  string_attr = "b-${var.label}"
  fail        = var.fail_b
}
resource "tftest5_pet" "r" {
  count   = var.others ? 1 : 0
  prefix  = var.prefix
  keepers = { zeta = "z", alpha = "a", mid = "m", beta = "b", kappa = "k", omega = "o", delta = "d" }
}
