package main

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// echoDataSource returns its dynamic input as its result, so a data read
// carries a value whose type travels with it.
type echoDataSource struct{}

func (d *echoDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_echo"
}

func (d *echoDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Attributes: map[string]schema.Attribute{
			"input":  schema.DynamicAttribute{Required: true},
			"result": schema.DynamicAttribute{Computed: true},
		},
	}
}

func (d *echoDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var in types.Dynamic
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("input"), &in)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.State.Raw = req.Config.Raw
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("result"), in)...)
}

// reverseFunction is provider::<type>::reverse(string), so the record holds
// GetFunctions and CallFunction calls too.
type reverseFunction struct{}

func (f *reverseFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "reverse"
}

func (f *reverseFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary:    "reverse a string by code points",
		Parameters: []function.Parameter{function.StringParameter{Name: "s"}},
		Return:     function.StringReturn{},
	}
}

func (f *reverseFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var s string
	resp.Error = req.Arguments.Get(ctx, &s)
	if resp.Error != nil {
		return
	}
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	resp.Error = resp.Result.Set(ctx, string(r))
}
