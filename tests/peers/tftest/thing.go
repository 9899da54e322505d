package main

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// thingResource stores its configuration as it is, with a random id. Its
// schema holds one of everything a DynamicValue can carry, and its "fail"
// attribute makes an apply misbehave on purpose:
//
//	"error"  an error diagnostic (the provider stays up)
//	"panic"  a Go panic: the process dies with a stack trace on stderr
//	"kill"   SIGKILL to itself: the process vanishes without a word
//	"exit"   os.Exit(7) in the middle of the call
//	"hang"   touch $TFTEST_HANG_MARKER (when set), then wait for the
//	         call to be cancelled (at most ten minutes); when the test
//	         removes the marker file instead, the apply goes on and succeeds
//	"stubborn" like "hang", but a cancelled call goes on hanging: only the
//	         marker's removal (or the process's end) releases it
//
// The failure happens on create and update only, so a destroy always works.
type thingResource struct {
	protocol int
}

var _ resource.ResourceWithModifyPlan = (*thingResource)(nil)

func (r *thingResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_thing"
}

func (r *thingResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	attrs := map[string]schema.Attribute{
		"id":           schema.StringAttribute{Computed: true, PlanModifiers: keep},
		"string_attr":  schema.StringAttribute{Optional: true},
		"number_attr":  schema.NumberAttribute{Optional: true},
		"int_attr":     schema.Int64Attribute{Optional: true},
		"float_attr":   schema.Float64Attribute{Optional: true},
		"bool_attr":    schema.BoolAttribute{Optional: true},
		"list_attr":    schema.ListAttribute{Optional: true, ElementType: types.StringType},
		"set_attr":     schema.SetAttribute{Optional: true, ElementType: types.StringType},
		"map_attr":     schema.MapAttribute{Optional: true, ElementType: types.NumberType},
		"dynamic_attr": schema.DynamicAttribute{Optional: true},
		"object_attr": schema.ObjectAttribute{Optional: true, AttributeTypes: map[string]attr.Type{
			"name":  types.StringType,
			"count": types.NumberType,
			"tags":  types.ListType{ElemType: types.StringType},
		}},
		"secret": schema.StringAttribute{Optional: true, Sensitive: true},
		"fail":   schema.StringAttribute{Optional: true},
	}
	if r.protocol >= 6 {
		// Nested attributes exist in protocol 6 only.
		attrs["single"] = schema.SingleNestedAttribute{Optional: true, Attributes: map[string]schema.Attribute{
			"a": schema.StringAttribute{Optional: true},
			"b": schema.NumberAttribute{Optional: true},
		}}
		attrs["entries"] = schema.ListNestedAttribute{Optional: true, NestedObject: schema.NestedAttributeObject{
			Attributes: map[string]schema.Attribute{
				"key":   schema.StringAttribute{Required: true},
				"value": schema.StringAttribute{Optional: true, Sensitive: true},
			},
		}}
	}
	resp.Schema = schema.Schema{
		Attributes: attrs,
		Blocks: map[string]schema.Block{
			"rule": schema.ListNestedBlock{NestedObject: schema.NestedBlockObject{
				Attributes: map[string]schema.Attribute{
					"name": schema.StringAttribute{Required: true},
					"port": schema.Int64Attribute{Optional: true},
				},
			}},
			"settings": schema.SingleNestedBlock{Attributes: map[string]schema.Attribute{
				"enabled": schema.BoolAttribute{Optional: true},
				"level":   schema.StringAttribute{Optional: true},
			}},
		},
	}
}

// ModifyPlan accepts "plan-error" and "plan-panic" to fail while planning,
// and "quote-secret": an error whose words quote the value of the
// schema-sensitive attribute "secret", as a careless provider's would.
func (r *thingResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	var fail types.String
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("fail"), &fail)...)
	switch fail.ValueString() {
	case "plan-error":
		resp.Diagnostics.AddError("tftest: planned failure", "the configuration asked for fail = \"plan-error\"")
	case "plan-panic":
		panic("tftest: the configuration asked for fail = \"plan-panic\"")
	case "quote-secret":
		var secret types.String
		resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("secret"), &secret)...)
		resp.Diagnostics.AddAttributeError(path.Root("secret"), "tftest: secret refused",
			fmt.Sprintf("the secret %q is not accepted here", secret.ValueString()))
	}
}

func (r *thingResource) misbehave(ctx context.Context, fail string) string {
	switch fail {
	case "error":
		return "the configuration asked for fail = \"error\""
	case "panic":
		panic("tftest: the configuration asked for fail = \"panic\"")
	case "kill":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Minute)
	case "exit":
		os.Exit(7)
	case "hang", "stubborn":
		marker := os.Getenv("TFTEST_HANG_MARKER")
		if marker != "" {
			_ = os.WriteFile(marker, []byte("hanging\n"), 0o644)
		}
		deadline := time.After(10 * time.Minute)
		for {
			select {
			case <-ctx.Done():
				if fail == "stubborn" {
					ctx = context.Background()
					continue
				}
				return "the apply was cancelled while hanging"
			case <-deadline:
				return "the apply was cancelled while hanging"
			case <-time.After(100 * time.Millisecond):
				if _, err := os.Stat(marker); marker != "" && os.IsNotExist(err) {
					return "" // released by the test
				}
			}
		}
	}
	return ""
}

func (r *thingResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var fail types.String
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("fail"), &fail)...)
	if msg := r.misbehave(ctx, fail.ValueString()); msg != "" {
		resp.Diagnostics.AddError("tftest: apply failed", msg)
		return
	}
	resp.State.Raw = req.Plan.Raw
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), "thing-"+pick(adjectives)+"-"+pick(animals))...)
}

func (r *thingResource) Read(context.Context, resource.ReadRequest, *resource.ReadResponse) {}

func (r *thingResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var fail types.String
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("fail"), &fail)...)
	if msg := r.misbehave(ctx, fail.ValueString()); msg != "" {
		resp.Diagnostics.AddError("tftest: apply failed", msg)
		return
	}
	resp.State.Raw = req.Plan.Raw
}

func (r *thingResource) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {}
