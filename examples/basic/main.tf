# A small configuration for tftap's demo and end-to-end tests. It uses the
# project's own test providers (tests/peers/tftest, built by
# scripts/build-peers and installed from its local mirror): tftest5 speaks
# plugin protocol 5 (like random and null), tftest6 protocol 6 (like
# tfcoremock).
terraform {
  required_providers {
    tftest5 = {
      source  = "tftap/tftest5"
      version = "0.1.0"
    }
    tftest6 = {
      source  = "tftap/tftest6"
      version = "0.1.0"
    }
  }
}

provider "tftest6" {
  label = "basic"
  token = "not-a-real-secret"
}

variable "environment" {
  type    = string
  default = "demo"
}

# Like random_pet: a random name, replaced when a keeper changes.
resource "tftest5_pet" "server" {
  length = 3
  keepers = {
    environment = var.environment
  }
}

# Like random_id: random bytes in several encodings.
resource "tftest5_id" "suffix" {
  byte_length = 6
}

# Like null_resource: only an id, replaced when its triggers change.
resource "tftest5_trigger" "deploy" {
  triggers = {
    pet    = tftest5_pet.server.id
    suffix = tftest5_id.suffix.hex
  }
}

# Like tfcoremock_simple_resource: one of every value type.
resource "tftest6_thing" "config" {
  string_attr = "${tftest5_pet.server.id}-${tftest5_id.suffix.hex}"
  number_attr = 3.14159265358979323846264338327950288
  int_attr    = 42
  float_attr  = 0.1
  bool_attr   = true
  list_attr   = ["a", "b", provider::tftest6::reverse("tftap")]
  set_attr    = ["x", "y"]
  map_attr    = { one = 1, big = 12345678901234567890 }
  object_attr = { name = "obj", count = 2, tags = ["t1"] }
  dynamic_attr = { nested = [1, 2, 3] }
  secret      = "hunter2"

  single = { a = "alpha", b = -7 }
  entries = [
    { key = "k1", value = "v1" },
    { key = "k2" },
  ]

  rule {
    name = "http"
    port = 80
  }
  rule {
    name = "https"
    port = 443
  }
  settings {
    enabled = true
    level   = "high"
  }
}

data "tftest6_echo" "echo" {
  input = { pet = tftest5_pet.server.id, n = 1 }
}

output "pet_name" {
  value = tftest5_pet.server.id
}

output "thing_id" {
  value = tftest6_thing.config.id
}

output "echo" {
  value = data.tftest6_echo.echo.result
}
