# tests/e2e/naming.sh: instances that differ by one attribute, or by
# nothing at all, under count, for_each (keys with spaces and quotes) and
# modules with count. var.gen changes a few of them from run to run.
terraform {
  required_providers {
    tftest5 = { source = "tftap/tftest5" }
    tftest6 = { source = "tftap/tftest6" }
  }
}

variable "gen" {
  type    = number
  default = 0
}

# Issue 24: one instance sets prefix, the others leave it null.
resource "tftest5_pet" "fe" {
  for_each = toset(["a b", "c", "d\"q"])
  prefix   = each.key == "c" ? "cc" : null
}

# Values from count.index; the first replaced when gen is odd. (Lengths no
# other instance has: a pet's id is random words, and two instances whose
# ids collide and whose values differ are not told apart when one is
# replaced.)
resource "tftest5_pet" "cnt" {
  count   = 3
  length  = count.index + 3
  keepers = count.index == 0 && var.gen % 2 == 1 ? { gen = tostring(var.gen) } : null
}

# Nothing tells these apart.
resource "tftest5_pet" "eq" {
  count = 3
}

# Equal but for a separator (null or a value) or a map.
resource "tftest5_pet" "cond" {
  count     = 3
  separator = count.index == 1 ? "_" : null
  keepers   = count.index == 2 ? { "k \"q\"" = "v" } : null
}

resource "tftest5_pet" "keyed" {
  for_each = { "x y" = 1, "q\"t" = 2, "plain" = 1 }
  length   = each.value
  prefix   = each.key
}

# Updated in place, with sets and secrets that differ by instance.
resource "tftest6_thing" "t" {
  count       = 3
  string_attr = count.index == 1 && var.gen >= 2 ? "changed ${var.gen}" : null
  set_attr    = count.index == 2 ? ["b", "a", "c"] : null
  secret      = count.index == 0 ? "s3cret" : null
  int_attr    = count.index == 0 ? null : count.index
}

data "tftest5_echo" "e" {
  count = 2
  input = count.index == 0 ? "x" : "y"
}

module "m" {
  count  = 2
  source = "./m"
  n      = count.index
}

variable "fail" {
  type    = bool
  default = false
}

# A failed create (f[1]) beside two equal ones that succeed.
resource "tftest6_thing" "f" {
  count    = var.fail ? 3 : 0
  int_attr = 7
  fail     = count.index == 1 ? "error" : null
}

# The only block of its type: a plan not saved names it from the
# configuration.
resource "tftest6_pet" "solo" {
  length = 4
}

module "one" {
  source = "./one"
}

# From gen 5 on one instance, reading what r[1] read before: r[1]'s object
# in the state before is not r[0]'s read.
data "tftest5_echo" "r" {
  count = var.gen >= 5 ? 1 : 2
  input = var.gen >= 5 || count.index == 1 ? "y" : "x"
}
