package main

// <type>_misbehave: a resource that breaks the provider contract on demand,
// so that the end-to-end tests can compare `tftap check` with the verdicts
// OpenTofu itself gives (tests/e2e/check.sh).
//
// The resource itself (below) behaves; the misbehaviour is applied to its
// answers at the plugin-protocol level, after the framework built them
// (misbehave5/misbehave6 wrap the framework's server), because the
// framework's own checks would refuse to send some of them. The attribute
// `rule` selects one misbehaviour (misbehaviours below); `legacy = true` also
// sets the legacy type system flag on plan and apply answers, which makes
// core tolerate (log) what it would otherwise reject.

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov5"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// misbehaviours, by the phase whose answer they change:
//
//	plan_config_changed   plan a different known value for configured `value`
//	plan_unknown_config   plan unknown for configured `value`
//	plan_noncomputed      plan a value for `extra` (optional, not computed) left null
//	plan_block_count      plan one `item` block more than configured
//	plan_replace_missing  (update) requires_replace names `.nope`, which does not exist
//	plan_destroy_nonnull  (destroy) plan the prior object instead of null
//	final_plan_changed    plan `computed` as a known value that differs per process, so
//	                      the plan made during apply disagrees with the first one
//	apply_changed         apply a different value for `value` than planned
//	apply_null_attr       apply null for `value`
//	apply_unknown         apply leaves `computed` unknown
//	apply_list_grows      apply adds an element to `list`
//	apply_set_grows       apply adds an element to `set`
//	apply_refinement      plan `computed` unknown with prefix "id-", apply "xyz"
//	apply_null_object     apply (create/update) returns a null object
//	apply_delete_nonnull  (destroy) apply returns the prior object
//	read_drift            refresh returns another `value` (drift, allowed)
const misbehaveSuffix = "_misbehave"

var mbItemType = tftypes.Object{AttributeTypes: map[string]tftypes.Type{"name": tftypes.String}}

var mbObjectType = tftypes.Object{AttributeTypes: map[string]tftypes.Type{
	"rule":     tftypes.String,
	"legacy":   tftypes.Bool,
	"value":    tftypes.String,
	"computed": tftypes.String,
	"extra":    tftypes.String,
	"list":     tftypes.List{ElementType: tftypes.String},
	"set":      tftypes.Set{ElementType: tftypes.String},
	"item":     tftypes.List{ElementType: mbItemType},
}}

type misbehaveResource struct{}

func (r *misbehaveResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + misbehaveSuffix
}

func (r *misbehaveResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Attributes: map[string]schema.Attribute{
			"rule":     schema.StringAttribute{Required: true},
			"legacy":   schema.BoolAttribute{Optional: true},
			"value":    schema.StringAttribute{Optional: true},
			"computed": schema.StringAttribute{Computed: true},
			"extra":    schema.StringAttribute{Optional: true},
			"list":     schema.ListAttribute{ElementType: types.StringType, Optional: true},
			"set":      schema.SetAttribute{ElementType: types.StringType, Optional: true},
		},
		Blocks: map[string]schema.Block{
			"item": schema.ListNestedBlock{NestedObject: schema.NestedBlockObject{
				Attributes: map[string]schema.Attribute{"name": schema.StringAttribute{Optional: true}},
			}},
		},
	}
}

// known fills what the plan left unknown (only `computed` can be).
func known(v tftypes.Value) tftypes.Value {
	out, err := tftypes.Transform(v, func(_ *tftypes.AttributePath, v tftypes.Value) (tftypes.Value, error) {
		if !v.IsKnown() && v.Type().Is(tftypes.String) {
			return tftypes.NewValue(tftypes.String, "id-done"), nil
		}
		return v, nil
	})
	if err != nil {
		panic(err)
	}
	return out
}

func (r *misbehaveResource) Create(_ context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	resp.State.Raw = known(req.Plan.Raw)
}

func (r *misbehaveResource) Read(context.Context, resource.ReadRequest, *resource.ReadResponse) {}

func (r *misbehaveResource) Update(_ context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	resp.State.Raw = known(req.Plan.Raw)
}

func (r *misbehaveResource) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {
}

// ---- the misbehaviours, on msgpack values -----------------------------------

func mbDecode(b []byte) map[string]tftypes.Value {
	if len(b) == 0 {
		return nil
	}
	v, err := tftypes.ValueFromMsgPack(b, mbObjectType)
	if err != nil || v.IsNull() || !v.IsKnown() {
		return nil
	}
	var m map[string]tftypes.Value
	if err := v.As(&m); err != nil {
		return nil
	}
	return m
}

func mbEncode(m map[string]tftypes.Value) []byte {
	var v tftypes.Value
	if m == nil {
		v = tftypes.NewValue(mbObjectType, nil)
	} else {
		v = tftypes.NewValue(mbObjectType, m)
	}
	b, err := v.MarshalMsgPack(mbObjectType) //nolint:staticcheck // the wire form is what we change
	if err != nil {
		panic(err)
	}
	return b
}

// The rule and legacy flag, from the config or, for a destroy, the prior state.
func mbRule(objs ...map[string]tftypes.Value) (string, bool) {
	for _, m := range objs {
		if m == nil {
			continue
		}
		var rule string
		var legacy bool
		_ = m["rule"].As(&rule)
		if l := m["legacy"]; !l.IsNull() {
			_ = l.As(&legacy)
		}
		return rule, legacy
	}
	return "", false
}

func str(s string) tftypes.Value { return tftypes.NewValue(tftypes.String, s) }

func appendElem(v tftypes.Value, typ tftypes.Type, elem tftypes.Value) tftypes.Value {
	var elems []tftypes.Value
	if !v.IsNull() {
		_ = v.As(&elems)
	}
	return tftypes.NewValue(typ, append(elems, elem))
}

// go-cty's plain unknown, and an unknown string refined to start with "id-"
// (extension 12, payload {2: "id-"}): tftypes cannot write refinements.
var (
	plainUnknown   = []byte{0xd4, 0x00, 0x00}
	refinedUnknown = []byte{0xc7, 0x06, 0x0c, 0x81, 0x02, 0xa3, 'i', 'd', '-'}
)

type mbPlanOut struct {
	planned []byte
	replace []*tftypes.AttributePath
	legacy  bool
}

func misbehavePlan(prior, config, planned []byte) mbPlanOut {
	pr, cf, pl := mbDecode(prior), mbDecode(config), mbDecode(planned)
	rule, legacy := mbRule(cf, pr)
	out := mbPlanOut{planned: planned, legacy: legacy}
	switch {
	case rule == "plan_destroy_nonnull" && cf == nil && pr != nil:
		out.planned = prior
		return out
	case pl == nil:
		return out
	}
	switch rule {
	case "plan_config_changed":
		var s string
		_ = pl["value"].As(&s)
		pl["value"] = str(s + "-planned")
	case "plan_unknown_config":
		pl["value"] = tftypes.NewValue(tftypes.String, tftypes.UnknownValue)
	case "plan_noncomputed":
		pl["extra"] = str("surprise")
	case "plan_block_count":
		pl["item"] = appendElem(pl["item"], tftypes.List{ElementType: mbItemType},
			tftypes.NewValue(mbItemType, map[string]tftypes.Value{"name": str("extra")}))
	case "plan_replace_missing":
		if pr != nil {
			out.replace = append(out.replace, tftypes.NewAttributePath().WithAttributeName("nope"))
		}
	case "final_plan_changed":
		pl["computed"] = str(fmt.Sprintf("pid-%d", os.Getpid()))
	case "apply_refinement":
		pl["computed"] = tftypes.NewValue(tftypes.String, tftypes.UnknownValue)
		out.planned = bytes.Replace(mbEncode(pl), plainUnknown, refinedUnknown, 1)
		return out
	default:
		return out
	}
	out.planned = mbEncode(pl)
	return out
}

func misbehaveApply(prior, planned, config, newState []byte) ([]byte, bool) {
	pr, pl, cf, nw := mbDecode(prior), mbDecode(planned), mbDecode(config), mbDecode(newState)
	rule, legacy := mbRule(cf, pr)
	if pl == nil {
		if rule == "apply_delete_nonnull" && pr != nil {
			return prior, legacy
		}
		return newState, legacy
	}
	if nw == nil {
		return newState, legacy
	}
	switch rule {
	case "apply_changed":
		var s string
		_ = nw["value"].As(&s)
		nw["value"] = str(s + "-applied")
	case "apply_null_attr":
		nw["value"] = tftypes.NewValue(tftypes.String, nil)
	case "apply_unknown":
		nw["computed"] = tftypes.NewValue(tftypes.String, tftypes.UnknownValue)
	case "apply_list_grows":
		nw["list"] = appendElem(nw["list"], tftypes.List{ElementType: tftypes.String}, str("grown"))
	case "apply_set_grows":
		nw["set"] = appendElem(nw["set"], tftypes.Set{ElementType: tftypes.String}, str("grown"))
	case "apply_refinement":
		nw["computed"] = str("xyz")
	case "apply_null_object":
		return mbEncode(nil), legacy
	default:
		return newState, legacy
	}
	return mbEncode(nw), legacy
}

func misbehaveRead(current, newState []byte) []byte {
	cur, nw := mbDecode(current), mbDecode(newState)
	if rule, _ := mbRule(cur); rule != "read_drift" || nw == nil {
		return newState
	}
	nw["value"] = str("drifted")
	return mbEncode(nw)
}

func isMisbehave(typ string) bool { return typ == typeName+misbehaveSuffix }

// ---- the wrappers, one per protocol -----------------------------------------

type misbehaving6 struct{ tfprotov6.ProviderServer }

func misbehave6(f func() tfprotov6.ProviderServer) func() tfprotov6.ProviderServer {
	return func() tfprotov6.ProviderServer { return misbehaving6{f()} }
}

func mp6(v *tfprotov6.DynamicValue) []byte {
	if v == nil {
		return nil
	}
	return v.MsgPack
}

func (s misbehaving6) PlanResourceChange(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	resp, err := s.ProviderServer.PlanResourceChange(ctx, req)
	if err != nil || resp == nil || !isMisbehave(req.TypeName) || hasError6(resp.Diagnostics) {
		return resp, err
	}
	o := misbehavePlan(mp6(req.PriorState), mp6(req.Config), mp6(resp.PlannedState))
	resp.PlannedState = &tfprotov6.DynamicValue{MsgPack: o.planned}
	resp.RequiresReplace = append(resp.RequiresReplace, o.replace...)
	resp.UnsafeToUseLegacyTypeSystem = resp.UnsafeToUseLegacyTypeSystem || o.legacy
	return resp, nil
}

func (s misbehaving6) ApplyResourceChange(ctx context.Context, req *tfprotov6.ApplyResourceChangeRequest) (*tfprotov6.ApplyResourceChangeResponse, error) {
	resp, err := s.ProviderServer.ApplyResourceChange(ctx, req)
	if err != nil || resp == nil || !isMisbehave(req.TypeName) || hasError6(resp.Diagnostics) {
		return resp, err
	}
	b, legacy := misbehaveApply(mp6(req.PriorState), mp6(req.PlannedState), mp6(req.Config), mp6(resp.NewState))
	resp.NewState = &tfprotov6.DynamicValue{MsgPack: b}
	resp.UnsafeToUseLegacyTypeSystem = resp.UnsafeToUseLegacyTypeSystem || legacy
	return resp, nil
}

func (s misbehaving6) ReadResource(ctx context.Context, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	resp, err := s.ProviderServer.ReadResource(ctx, req)
	if err != nil || resp == nil || !isMisbehave(req.TypeName) || hasError6(resp.Diagnostics) {
		return resp, err
	}
	resp.NewState = &tfprotov6.DynamicValue{MsgPack: misbehaveRead(mp6(req.CurrentState), mp6(resp.NewState))}
	return resp, nil
}

func hasError6(d []*tfprotov6.Diagnostic) bool {
	for _, x := range d {
		if x != nil && x.Severity == tfprotov6.DiagnosticSeverityError {
			return true
		}
	}
	return false
}

type misbehaving5 struct{ tfprotov5.ProviderServer }

func misbehave5(f func() tfprotov5.ProviderServer) func() tfprotov5.ProviderServer {
	return func() tfprotov5.ProviderServer { return misbehaving5{f()} }
}

func mp5(v *tfprotov5.DynamicValue) []byte {
	if v == nil {
		return nil
	}
	return v.MsgPack
}

func (s misbehaving5) PlanResourceChange(ctx context.Context, req *tfprotov5.PlanResourceChangeRequest) (*tfprotov5.PlanResourceChangeResponse, error) {
	resp, err := s.ProviderServer.PlanResourceChange(ctx, req)
	if err != nil || resp == nil || !isMisbehave(req.TypeName) || hasError5(resp.Diagnostics) {
		return resp, err
	}
	o := misbehavePlan(mp5(req.PriorState), mp5(req.Config), mp5(resp.PlannedState))
	resp.PlannedState = &tfprotov5.DynamicValue{MsgPack: o.planned}
	resp.RequiresReplace = append(resp.RequiresReplace, o.replace...)
	resp.UnsafeToUseLegacyTypeSystem = resp.UnsafeToUseLegacyTypeSystem || o.legacy
	return resp, nil
}

func (s misbehaving5) ApplyResourceChange(ctx context.Context, req *tfprotov5.ApplyResourceChangeRequest) (*tfprotov5.ApplyResourceChangeResponse, error) {
	resp, err := s.ProviderServer.ApplyResourceChange(ctx, req)
	if err != nil || resp == nil || !isMisbehave(req.TypeName) || hasError5(resp.Diagnostics) {
		return resp, err
	}
	b, legacy := misbehaveApply(mp5(req.PriorState), mp5(req.PlannedState), mp5(req.Config), mp5(resp.NewState))
	resp.NewState = &tfprotov5.DynamicValue{MsgPack: b}
	resp.UnsafeToUseLegacyTypeSystem = resp.UnsafeToUseLegacyTypeSystem || legacy
	return resp, nil
}

func (s misbehaving5) ReadResource(ctx context.Context, req *tfprotov5.ReadResourceRequest) (*tfprotov5.ReadResourceResponse, error) {
	resp, err := s.ProviderServer.ReadResource(ctx, req)
	if err != nil || resp == nil || !isMisbehave(req.TypeName) || hasError5(resp.Diagnostics) {
		return resp, err
	}
	resp.NewState = &tfprotov5.DynamicValue{MsgPack: misbehaveRead(mp5(req.CurrentState), mp5(resp.NewState))}
	return resp, nil
}

func hasError5(d []*tfprotov5.Diagnostic) bool {
	for _, x := range d {
		if x != nil && x.Severity == tfprotov5.DiagnosticSeverityError {
			return true
		}
	}
	return false
}
