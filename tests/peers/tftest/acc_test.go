// Acceptance tests of tftest written with terraform-plugin-testing, as a
// provider's own suite is: the provider is served in-process and handed to
// the CLI named by TF_ACC_TERRAFORM_PATH through TF_REATTACH_PROVIDERS.
// tests/e2e/acceptance.sh runs them through `tftap run` and checks that
// every step of every test is recorded and named.
//
// Built once by scripts/build-peers (`go test -c`, with the same link-time
// variables as the provider binaries: main.variant=v2 gives the build whose
// server size default differs). Run with TF_ACC=1; they skip without it.
package main

import (
	"fmt"
	"os"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov5"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// The harness names the provider under test registry/NAMESPACE/TYPE: for
// OpenTofu (the project's CLI) that is its own registry and tftap's
// namespace, where the configurations below expect it.
func TestMain(m *testing.M) {
	for k, v := range map[string]string{
		"TF_ACC_PROVIDER_NAMESPACE": namespace,
		"TF_ACC_PROVIDER_HOST":      "registry.opentofu.org",
	} {
		if os.Getenv(k) == "" {
			os.Setenv(k, v)
		}
	}
	os.Exit(m.Run())
}

// accCase fills in the provider under test, in the protocol it was built for.
func accCase(c resource.TestCase) resource.TestCase {
	proto := 6
	fmt.Sscan(protocol, &proto)
	if proto == 5 {
		c.ProtoV5ProviderFactories = map[string]func() (tfprotov5.ProviderServer, error){
			typeName: providerserver.NewProtocol5WithError(newProvider(typeName, 5)()),
		}
	} else {
		c.ProtoV6ProviderFactories = map[string]func() (tfprotov6.ProviderServer, error){
			typeName: providerserver.NewProtocol6WithError(newProvider(typeName, 6)()),
		}
	}
	return c
}

func cfg(format string, args ...any) string {
	return fmt.Sprintf("provider %q {\n  label = \"acc\"\n}\n", typeName) + fmt.Sprintf(format, args...)
}

// A server created, changed in place, then imported by its id.
func TestAccServer_lifecycle(t *testing.T) {
	t.Parallel()
	res := typeName + "_server.s"
	resource.Test(t, accCase(resource.TestCase{
		Steps: []resource.TestStep{
			{
				Config: cfg("resource %q \"s\" {\n  name = \"alpha\"\n}\n", typeName+"_server"),
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr(res, "name", "alpha"),
					resource.TestCheckResourceAttrSet(res, "id"),
					resource.TestCheckResourceAttrSet(res, "size"),
				),
			},
			{
				Config: cfg("resource %q \"s\" {\n  name = \"alpha\"\n  zone = \"z1\"\n}\n", typeName+"_server"),
				Check:  resource.TestCheckResourceAttr(res, "zone", "z1"),
			},
			{
				ResourceName:      res,
				ImportState:       true,
				ImportStateVerify: false,
			},
		},
	}))
}

// A pet whose length forces a replacement, and a second resource added.
func TestAccPet_length(t *testing.T) {
	t.Parallel()
	res := typeName + "_pet.p"
	resource.Test(t, accCase(resource.TestCase{
		Steps: []resource.TestStep{
			{
				Config: cfg("resource %q \"p\" {\n  length = 2\n}\n", typeName+"_pet"),
				Check:  resource.TestCheckResourceAttr(res, "length", "2"),
			},
			{
				Config: cfg("resource %q \"p\" {\n  length = 3\n}\n", typeName+"_pet"),
				Check:  resource.TestCheckResourceAttr(res, "length", "3"),
			},
			{
				Config: cfg("resource %q \"p\" {\n  length = 3\n}\nresource %q \"i\" {\n  byte_length = 4\n}\n",
					typeName+"_pet", typeName+"_id"),
				Check: resource.TestCheckResourceAttrSet(typeName+"_id.i", "hex"),
			},
		},
	}))
}

// A step that must fail (the provider answers an error diagnostic while
// planning), then one that succeeds.
func TestAccThing_expectError(t *testing.T) {
	t.Parallel()
	resource.Test(t, accCase(resource.TestCase{
		Steps: []resource.TestStep{
			{
				Config:      cfg("resource %q \"t\" {\n  string_attr = \"x\"\n  fail = \"plan-error\"\n}\n", typeName+"_thing"),
				ExpectError: regexp.MustCompile(`tftest: planned failure`),
			},
			{
				Config: cfg("resource %q \"t\" {\n  string_attr = \"x\"\n}\n", typeName+"_thing"),
				Check:  resource.TestCheckResourceAttr(typeName+"_thing.t", "string_attr", "x"),
			},
		},
	}))
}
