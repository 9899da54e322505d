# tests/e2e/naming.sh: a create that fails (tofu says "with
# tftest6_thing.bad") beside others that succeed. tftest6_thing has this one
# block, without count or for_each: the configuration makes its address
# certain, though no state or plan names the object that was never made.
terraform {
  required_providers {
    tftest5 = { source = "tftap/tftest5" }
    tftest6 = { source = "tftap/tftest6" }
  }
}

resource "tftest6_thing" "bad" {
  int_attr = 3
  fail     = "error"
}

resource "tftest5_pet" "ok" {
  count  = 2
  length = count.index + 2
}
