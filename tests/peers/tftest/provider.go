package main

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
)

// tftestProvider has an optional configuration so that ConfigureProvider
// carries a value, including a sensitive one the recorder must redact.
type tftestProvider struct {
	typeName string
	protocol int
}

func newProvider(typeName string, protocol int) func() provider.Provider {
	return func() provider.Provider {
		return &tftestProvider{typeName: typeName, protocol: protocol}
	}
}

var _ provider.ProviderWithFunctions = (*tftestProvider)(nil)

func (p *tftestProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = p.typeName
	resp.Version = version
}

func (p *tftestProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		Attributes: map[string]schema.Attribute{
			"label": schema.StringAttribute{Optional: true},
			"token": schema.StringAttribute{Optional: true, Sensitive: true},
		},
	}
}

func (p *tftestProvider) Configure(context.Context, provider.ConfigureRequest, *provider.ConfigureResponse) {
}

func (p *tftestProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		func() resource.Resource { return &petResource{} },
		func() resource.Resource { return &idResource{} },
		func() resource.Resource { return &triggerResource{} },
		func() resource.Resource { return &thingResource{protocol: p.protocol} },
		func() resource.Resource { return &misbehaveResource{} },
		func() resource.Resource { return &serverResource{} }, // variant.go
	}
}

func (p *tftestProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{
		func() datasource.DataSource { return &echoDataSource{} },
	}
}

func (p *tftestProvider) Functions(context.Context) []func() function.Function {
	return []func() function.Function{
		func() function.Function { return &reverseFunction{} },
	}
}
