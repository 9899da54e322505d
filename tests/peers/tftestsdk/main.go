// Command tftestsdk is a small provider built on terraform-plugin-sdk/v2,
// whose answers carry the legacy type system flag: OpenTofu tolerates (only
// logs, at WARN) contract violations from it that it rejects from other
// providers. tests/e2e/check.sh compares those warnings with `tftap check`.
//
// tftestsdk_misbehave breaks the contract the ways SDK providers do:
//
//	hashed      (any rule) a StateFunc plans the upper-cased value instead of
//	            the configured one: "invalid plan", tolerated
//	rule = "apply_changed"  Create stores another `value` than planned
//	rule = "list_grows"     Create adds an element to `list`
//	rule = "read_drift"     Read reports another `value` (drift)
package main

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"
	"github.com/hashicorp/terraform-plugin-sdk/v2/plugin"
)

func main() {
	plugin.Serve(&plugin.ServeOpts{ProviderFunc: provider})
}

func provider() *schema.Provider {
	return &schema.Provider{
		ResourcesMap: map[string]*schema.Resource{
			"tftestsdk_misbehave": misbehave(),
		},
	}
}

func misbehave() *schema.Resource {
	return &schema.Resource{
		CreateContext: create,
		ReadContext:   read,
		UpdateContext: update,
		DeleteContext: func(context.Context, *schema.ResourceData, any) diag.Diagnostics { return nil },
		Schema: map[string]*schema.Schema{
			"rule":  {Type: schema.TypeString, Required: true},
			"value": {Type: schema.TypeString, Optional: true},
			"hashed": {Type: schema.TypeString, Optional: true,
				StateFunc: func(v any) string { return strings.ToUpper(v.(string)) }},
			"list":     {Type: schema.TypeList, Optional: true, Elem: &schema.Schema{Type: schema.TypeString}},
			"computed": {Type: schema.TypeString, Computed: true},
		},
	}
}

func create(_ context.Context, d *schema.ResourceData, _ any) diag.Diagnostics {
	d.SetId("sdk-1")
	_ = d.Set("computed", "done")
	switch d.Get("rule").(string) {
	case "apply_changed":
		_ = d.Set("value", d.Get("value").(string)+"-applied")
	case "list_grows":
		_ = d.Set("list", append(d.Get("list").([]any), "grown"))
	}
	return nil
}

func read(_ context.Context, d *schema.ResourceData, _ any) diag.Diagnostics {
	if d.Get("rule").(string) == "read_drift" {
		_ = d.Set("value", "drifted")
	}
	return nil
}

func update(_ context.Context, d *schema.ResourceData, _ any) diag.Diagnostics {
	return nil
}
