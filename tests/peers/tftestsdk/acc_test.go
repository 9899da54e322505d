// Acceptance tests of tftestsdk with terraform-plugin-sdk/v2's own harness
// (helper/resource, which still has its own copy of the test driver), for
// tests/e2e/acceptance.sh: recorded through `tftap run -- go test` as
// terraform-plugin-testing's are. Built once by scripts/build-peers
// (`go test -c`); run with TF_ACC=1.
package main

import (
	"os"
	"testing"

	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/resource"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"
)

// The provider under test is named in OpenTofu's registry (the
// configurations below name it without a source, as OpenTofu then does).
func TestMain(m *testing.M) {
	if os.Getenv("TF_ACC_PROVIDER_HOST") == "" {
		os.Setenv("TF_ACC_PROVIDER_HOST", "registry.opentofu.org")
	}
	os.Exit(m.Run())
}

var factories = map[string]func() (*schema.Provider, error){
	"tftestsdk": func() (*schema.Provider, error) { return provider(), nil },
}

// A value set, changed, then read back unchanged.
func TestAccSDK_value(t *testing.T) {
	t.Parallel()
	res := "tftestsdk_misbehave.m"
	resource.Test(t, resource.TestCase{
		ProviderFactories: factories,
		Steps: []resource.TestStep{
			{
				Config: "resource \"tftestsdk_misbehave\" \"m\" {\n  rule  = \"none\"\n  value = \"a\"\n}\n",
				Check:  resource.TestCheckResourceAttr(res, "value", "a"),
			},
			{
				Config: "resource \"tftestsdk_misbehave\" \"m\" {\n  rule  = \"none\"\n  value = \"b\"\n}\n",
				Check:  resource.TestCheckResourceAttr(res, "computed", "done"),
			},
		},
	})
}
