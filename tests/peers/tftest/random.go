package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"math/big"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// Resources whose values are random by design, so tests compare plans and
// states modulo these attributes. All inputs force replacement; Update only
// ever copies the plan.

var adjectives = []string{"amber", "brisk", "calm", "dapper", "eager", "fond", "gentle", "hardy",
	"ideal", "jolly", "keen", "lucid", "merry", "noble", "proud", "quiet", "rapid", "sunny",
	"tidy", "upbeat", "vivid", "witty", "young", "zesty"}
var animals = []string{"alpaca", "badger", "camel", "dingo", "egret", "ferret", "gecko", "heron",
	"ibis", "jackal", "koala", "lemur", "marmot", "newt", "otter", "panda", "quail", "raven",
	"stoat", "tapir", "urchin", "vole", "walrus", "yak", "zebra"}

func pick(words []string) string {
	n, err := rand.Int(rand.Reader, big.NewInt(int64(len(words))))
	if err != nil {
		panic(err)
	}
	return words[n.Int64()]
}

var replace = []planmodifier.String{stringplanmodifier.RequiresReplace()}
var keep = []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
var keepersAttr = schema.MapAttribute{
	ElementType:   types.StringType,
	Optional:      true,
	PlanModifiers: []planmodifier.Map{mapplanmodifier.RequiresReplace()},
}

// ---- <type>_pet: a random name of length words ----------------------------

type petResource struct{}

func (r *petResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_pet"
}

func (r *petResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, PlanModifiers: keep},
			"length": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(2),
				PlanModifiers: []planmodifier.Int64{int64planmodifier.RequiresReplace()}},
			"separator": schema.StringAttribute{Optional: true, Computed: true,
				Default: stringdefault.StaticString("-"), PlanModifiers: replace},
			"prefix":  schema.StringAttribute{Optional: true, PlanModifiers: replace},
			"keepers": keepersAttr,
		},
	}
}

func (r *petResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var length types.Int64
	var sep, prefix types.String
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("length"), &length)...)
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("separator"), &sep)...)
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("prefix"), &prefix)...)
	if resp.Diagnostics.HasError() {
		return
	}
	n := length.ValueInt64()
	if n < 1 || n > 16 {
		resp.Diagnostics.AddAttributeError(path.Root("length"), "bad length", "length must be 1 to 16")
		return
	}
	var parts []string
	if !prefix.IsNull() {
		parts = append(parts, prefix.ValueString())
	}
	for i := int64(0); i < n; i++ {
		if i == n-1 {
			parts = append(parts, pick(animals))
		} else {
			parts = append(parts, pick(adjectives))
		}
	}
	resp.State.Raw = req.Plan.Raw
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), strings.Join(parts, sep.ValueString()))...)
}

func (r *petResource) Read(context.Context, resource.ReadRequest, *resource.ReadResponse) {}

func (r *petResource) Update(_ context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	resp.State.Raw = req.Plan.Raw
}

func (r *petResource) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {}

// ---- <type>_id: byte_length random bytes in several encodings ---------------

type idResource struct{}

func (r *idResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_id"
}

func (r *idResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Attributes: map[string]schema.Attribute{
			"byte_length": schema.Int64Attribute{Required: true,
				PlanModifiers: []planmodifier.Int64{int64planmodifier.RequiresReplace()}},
			"keepers": keepersAttr,
			"id":      schema.StringAttribute{Computed: true, PlanModifiers: keep},
			"hex":     schema.StringAttribute{Computed: true, PlanModifiers: keep},
			"b64_std": schema.StringAttribute{Computed: true, PlanModifiers: keep},
			"dec":     schema.StringAttribute{Computed: true, PlanModifiers: keep},
		},
	}
}

func (r *idResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var n types.Int64
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("byte_length"), &n)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if n.ValueInt64() < 1 || n.ValueInt64() > 1024 {
		resp.Diagnostics.AddAttributeError(path.Root("byte_length"), "bad byte_length", "byte_length must be 1 to 1024")
		return
	}
	b := make([]byte, n.ValueInt64())
	if _, err := rand.Read(b); err != nil {
		resp.Diagnostics.AddError("random source failed", err.Error())
		return
	}
	resp.State.Raw = req.Plan.Raw
	set := func(name, v string) {
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root(name), v)...)
	}
	set("id", base64.RawURLEncoding.EncodeToString(b))
	set("hex", hex.EncodeToString(b))
	set("b64_std", base64.StdEncoding.EncodeToString(b))
	set("dec", new(big.Int).SetBytes(b).String())
}

func (r *idResource) Read(context.Context, resource.ReadRequest, *resource.ReadResponse) {}

func (r *idResource) Update(_ context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	resp.State.Raw = req.Plan.Raw
}

func (r *idResource) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {}

// ---- <type>_trigger: nothing but an id, replaced when triggers change -------

type triggerResource struct{}

func (r *triggerResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_trigger"
}

func (r *triggerResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Attributes: map[string]schema.Attribute{
			"triggers": keepersAttr,
			"id":       schema.StringAttribute{Computed: true, PlanModifiers: keep},
		},
	}
}

func (r *triggerResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		resp.Diagnostics.AddError("random source failed", err.Error())
		return
	}
	resp.State.Raw = req.Plan.Raw
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), n.String())...)
}

func (r *triggerResource) Read(context.Context, resource.ReadRequest, *resource.ReadResponse) {}

func (r *triggerResource) Update(_ context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	resp.State.Raw = req.Plan.Raw
}

func (r *triggerResource) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {}
