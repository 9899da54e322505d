package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// variant is the provider's behaviour version, fixed at link time with
// -ldflags "-X main.variant=v2" (scripts/build-peers publishes that build as
// version 0.2.0 next to the default v1 as 0.1.0). Only <type>_server
// differs, the way real provider upgrades do, so that tests/e2e/diff.sh can
// assert `tftap diff` and `tftap schema diff` find exactly these changes:
//
//	size     default "small" in v1, "medium" in v2
//	zone     updated in place in v1, forces replacement in v2
//	port     v2 warns when it is set (an attribute warning on .port)
//	tier     new in v2 (optional, default "standard")
//	legacy   removed in v2
var variant = "v1"

func isV2() bool { return variant == "v2" }

type serverResource struct{}

var _ resource.ResourceWithModifyPlan = (*serverResource)(nil)
var _ resource.ResourceWithImportState = (*serverResource)(nil)

func (r *serverResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_server"
}

func (r *serverResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	attrs := map[string]schema.Attribute{
		"id":   schema.StringAttribute{Computed: true, PlanModifiers: keep},
		"name": schema.StringAttribute{Required: true, PlanModifiers: replace},
		"port": schema.Int64Attribute{Optional: true},
	}
	if isV2() {
		attrs["size"] = schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("medium")}
		attrs["zone"] = schema.StringAttribute{Optional: true, PlanModifiers: replace}
		attrs["tier"] = schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("standard")}
	} else {
		attrs["size"] = schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("small")}
		attrs["zone"] = schema.StringAttribute{Optional: true}
		attrs["legacy"] = schema.StringAttribute{Optional: true}
	}
	resp.Schema = schema.Schema{Attributes: attrs}
}

func (r *serverResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || !isV2() {
		return
	}
	var port types.Int64
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("port"), &port)...)
	if !port.IsNull() && !port.IsUnknown() {
		resp.Diagnostics.AddAttributeWarning(path.Root("port"), "port is deprecated",
			"tftest 0.2.0 chooses the port itself; remove it from the configuration")
	}
}

func (r *serverResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		resp.Diagnostics.AddError("random source failed", err.Error())
		return
	}
	resp.State.Raw = req.Plan.Raw
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), "srv-"+hex.EncodeToString(b))...)
}

func (r *serverResource) Read(context.Context, resource.ReadRequest, *resource.ReadResponse) {}

func (r *serverResource) Update(_ context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	resp.State.Raw = req.Plan.Raw
}

// ImportState takes a server's id; the name is not known from it (Read has
// no cloud to ask), so an import step verifies the id alone.
func (r *serverResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}

func (r *serverResource) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {}
