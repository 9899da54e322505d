package main

// The benchmark corpora: (a) planned states of many resources shaped like
// the AWS provider's (instances, security groups, IAM policies), with the
// unknowns a plan has; (b) one very large, schema-shaped value.

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/zclconf/go-cty/cty"
)

func obj(attrs map[string]cty.Type) cty.Type { return cty.Object(attrs) }

var (
	tags = cty.Map(cty.String)

	ebsDevice = obj(map[string]cty.Type{
		"delete_on_termination": cty.Bool, "device_name": cty.String, "encrypted": cty.Bool,
		"iops": cty.Number, "kms_key_id": cty.String, "snapshot_id": cty.String, "tags": tags,
		"tags_all": tags, "throughput": cty.Number, "volume_id": cty.String, "volume_size": cty.Number,
		"volume_type": cty.String,
	})
	rootDevice = obj(map[string]cty.Type{
		"delete_on_termination": cty.Bool, "device_name": cty.String, "encrypted": cty.Bool,
		"iops": cty.Number, "kms_key_id": cty.String, "tags": tags, "tags_all": tags,
		"throughput": cty.Number, "volume_id": cty.String, "volume_size": cty.Number,
		"volume_type": cty.String,
	})

	instanceType = obj(map[string]cty.Type{
		"ami": cty.String, "arn": cty.String, "associate_public_ip_address": cty.Bool,
		"availability_zone": cty.String,
		"capacity_reservation_specification": cty.List(obj(map[string]cty.Type{
			"capacity_reservation_preference": cty.String,
			"capacity_reservation_target": cty.List(obj(map[string]cty.Type{
				"capacity_reservation_id": cty.String, "capacity_reservation_resource_group_arn": cty.String,
			})),
		})),
		"cpu_core_count": cty.Number, "cpu_threads_per_core": cty.Number,
		"credit_specification": cty.List(obj(map[string]cty.Type{"cpu_credits": cty.String})),
		"disable_api_stop":     cty.Bool, "disable_api_termination": cty.Bool,
		"ebs_block_device": cty.Set(ebsDevice), "ebs_optimized": cty.Bool,
		"enclave_options": cty.List(obj(map[string]cty.Type{"enabled": cty.Bool})),
		"ephemeral_block_device": cty.Set(obj(map[string]cty.Type{
			"device_name": cty.String, "no_device": cty.Bool, "virtual_name": cty.String,
		})),
		"get_password_data": cty.Bool, "hibernation": cty.Bool, "host_id": cty.String,
		"host_resource_group_arn": cty.String, "iam_instance_profile": cty.String, "id": cty.String,
		"instance_initiated_shutdown_behavior": cty.String, "instance_lifecycle": cty.String,
		"instance_state": cty.String, "instance_type": cty.String, "ipv6_address_count": cty.Number,
		"ipv6_addresses": cty.List(cty.String), "key_name": cty.String,
		"metadata_options": cty.List(obj(map[string]cty.Type{
			"http_endpoint": cty.String, "http_protocol_ipv6": cty.String,
			"http_put_response_hop_limit": cty.Number, "http_tokens": cty.String,
			"instance_metadata_tags": cty.String,
		})),
		"monitoring": cty.Bool,
		"network_interface": cty.Set(obj(map[string]cty.Type{
			"delete_on_termination": cty.Bool, "device_index": cty.Number,
			"network_card_index": cty.Number, "network_interface_id": cty.String,
		})),
		"outpost_arn": cty.String, "password_data": cty.String, "placement_group": cty.String,
		"placement_partition_number": cty.Number, "primary_network_interface_id": cty.String,
		"private_dns": cty.String, "private_ip": cty.String, "public_dns": cty.String,
		"public_ip": cty.String, "root_block_device": cty.List(rootDevice),
		"secondary_private_ips": cty.Set(cty.String), "security_groups": cty.Set(cty.String),
		"source_dest_check": cty.Bool, "spot_instance_request_id": cty.String,
		"subnet_id": cty.String, "tags": tags, "tags_all": tags, "tenancy": cty.String,
		"timeouts":  obj(map[string]cty.Type{"create": cty.String, "delete": cty.String, "update": cty.String}),
		"user_data": cty.String, "user_data_base64": cty.String, "user_data_replace_on_change": cty.Bool,
		"volume_tags": tags, "vpc_security_group_ids": cty.Set(cty.String),
	})

	sgRule = obj(map[string]cty.Type{
		"cidr_blocks": cty.List(cty.String), "description": cty.String, "from_port": cty.Number,
		"ipv6_cidr_blocks": cty.List(cty.String), "prefix_list_ids": cty.List(cty.String),
		"protocol": cty.String, "security_groups": cty.Set(cty.String), "self": cty.Bool,
		"to_port": cty.Number,
	})
	securityGroupType = obj(map[string]cty.Type{
		"arn": cty.String, "description": cty.String, "egress": cty.Set(sgRule), "id": cty.String,
		"ingress": cty.Set(sgRule), "name": cty.String, "name_prefix": cty.String,
		"owner_id": cty.String, "revoke_rules_on_delete": cty.Bool, "tags": tags,
		"tags_all": tags, "vpc_id": cty.String,
		"timeouts": obj(map[string]cty.Type{"create": cty.String, "delete": cty.String}),
	})

	iamPolicyType = obj(map[string]cty.Type{
		"arn": cty.String, "attachment_count": cty.Number, "description": cty.String,
		"id": cty.String, "name": cty.String, "name_prefix": cty.String, "path": cty.String,
		"policy": cty.String, "policy_id": cty.String, "tags": tags, "tags_all": tags,
	})
)

type corpusGen struct{ r *rand.Rand }

func (c *corpusGen) pick(xs ...string) string { return xs[c.r.IntN(len(xs))] }

func (c *corpusGen) hexid(prefix string, n int) string {
	const hexd = "0123456789abcdef"
	b := []byte(prefix)
	for i := 0; i < n; i++ {
		b = append(b, hexd[c.r.IntN(16)])
	}
	return string(b)
}

// computed is what a plan shows for an attribute the provider fills in on
// apply: unknown (often refined) when creating, the old value otherwise.
func (c *corpusGen) computed(creating bool, known cty.Value) cty.Value {
	if !creating {
		return known
	}
	u := cty.UnknownVal(known.Type())
	if known.Type() == cty.String && c.r.IntN(3) == 0 {
		return u.Refine().NotNull().NewValue()
	}
	return u
}

func (c *corpusGen) tagMap(n int) cty.Value {
	if n == 0 {
		return cty.MapValEmpty(cty.String)
	}
	m := map[string]cty.Value{
		"Name":        cty.StringVal(c.hexid("web-", 6)),
		"Environment": cty.StringVal(c.pick("production", "staging", "dev")),
		"Team":        cty.StringVal(c.pick("platform", "payments", "search", "data")),
		"ManagedBy":   cty.StringVal("opentofu"),
		"CostCenter":  cty.StringVal(fmt.Sprintf("cc-%04d", c.r.IntN(10000))),
	}
	for i := len(m); i < n; i++ {
		m[fmt.Sprintf("extra:%d", i)] = cty.StringVal(c.hexid("v", 12))
	}
	return cty.MapVal(m)
}

func (c *corpusGen) ebs(creating bool, root bool) cty.Value {
	tg := c.tagMap(c.r.IntN(3))
	attrs := map[string]cty.Value{
		"delete_on_termination": cty.True,
		"device_name":           cty.StringVal(c.pick("/dev/xvda", "/dev/sdb", "/dev/sdf", "/dev/sdh")),
		"encrypted":             cty.BoolVal(c.r.IntN(2) == 0),
		"iops":                  c.computed(creating, cty.NumberIntVal(3000)),
		"kms_key_id":            c.computed(creating, cty.StringVal(c.hexid("arn:aws:kms:us-east-1:123456789012:key/", 32))),
		"tags":                  tg,
		"tags_all":              c.computed(creating, tg),
		"throughput":            c.computed(creating, cty.NumberIntVal(125)),
		"volume_id":             c.computed(creating, cty.StringVal(c.hexid("vol-", 17))),
		"volume_size":           cty.NumberIntVal(int64(8 << c.r.IntN(6))),
		"volume_type":           cty.StringVal(c.pick("gp3", "gp2", "io1")),
	}
	if root {
		attrs["device_name"] = c.computed(creating, cty.StringVal("/dev/xvda"))
		return cty.ObjectVal(attrs)
	}
	attrs["snapshot_id"] = cty.StringVal(c.hexid("snap-", 17))
	return cty.ObjectVal(attrs)
}

const userData = `#!/bin/bash
set -euo pipefail
yum update -y
amazon-linux-extras install -y nginx1
cat > /etc/nginx/conf.d/app.conf <<'CONF'
server { listen 80; location / { proxy_pass http://127.0.0.1:8080; } }
CONF
systemctl enable --now nginx
`

func (c *corpusGen) instance(creating bool) cty.Value {
	str := func(s string) cty.Value { return cty.StringVal(s) }
	id := c.hexid("i-", 17)
	tg := c.tagMap(3 + c.r.IntN(6))
	ebsN := c.r.IntN(4)
	var ebs []cty.Value
	for i := 0; i < ebsN; i++ {
		ebs = append(ebs, c.ebs(creating, false))
	}
	ebsVal := cty.SetValEmpty(ebsDevice)
	if len(ebs) > 0 {
		ebsVal = cty.SetVal(ebs)
	}
	sgs := []cty.Value{str(c.hexid("sg-", 17)), str(c.hexid("sg-", 17))}
	ud := cty.NullVal(cty.String)
	if c.r.IntN(3) == 0 {
		ud = str(strings.Repeat(userData, 1+c.r.IntN(4)))
	}
	privIP := fmt.Sprintf("10.%d.%d.%d", c.r.IntN(256), c.r.IntN(256), c.r.IntN(256))
	return cty.ObjectVal(map[string]cty.Value{
		"ami":                         str(c.hexid("ami-", 17)),
		"arn":                         c.computed(creating, str("arn:aws:ec2:us-east-1:123456789012:instance/"+id)),
		"associate_public_ip_address": c.computed(creating, cty.BoolVal(c.r.IntN(2) == 0)),
		"availability_zone":           c.computed(creating, str(c.pick("us-east-1a", "us-east-1b", "us-east-1c"))),
		"capacity_reservation_specification": c.computed(creating, cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{
			"capacity_reservation_preference": str("open"),
			"capacity_reservation_target": cty.ListValEmpty(obj(map[string]cty.Type{
				"capacity_reservation_id": cty.String, "capacity_reservation_resource_group_arn": cty.String,
			})),
		})})),
		"cpu_core_count":          c.computed(creating, cty.NumberIntVal(int64(1<<c.r.IntN(4)))),
		"cpu_threads_per_core":    c.computed(creating, cty.NumberIntVal(2)),
		"credit_specification":    cty.ListValEmpty(obj(map[string]cty.Type{"cpu_credits": cty.String})),
		"disable_api_stop":        c.computed(creating, cty.False),
		"disable_api_termination": c.computed(creating, cty.False),
		"ebs_block_device":        ebsVal,
		"ebs_optimized":           c.computed(creating, cty.False),
		"enclave_options": c.computed(creating, cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{
			"enabled": cty.False,
		})})),
		"ephemeral_block_device": cty.SetValEmpty(obj(map[string]cty.Type{
			"device_name": cty.String, "no_device": cty.Bool, "virtual_name": cty.String,
		})),
		"get_password_data":                    cty.False,
		"hibernation":                          cty.NullVal(cty.Bool),
		"host_id":                              c.computed(creating, cty.NullVal(cty.String)),
		"host_resource_group_arn":              c.computed(creating, cty.NullVal(cty.String)),
		"iam_instance_profile":                 str("app-profile"),
		"id":                                   c.computed(creating, str(id)),
		"instance_initiated_shutdown_behavior": c.computed(creating, str("stop")),
		"instance_lifecycle":                   c.computed(creating, cty.NullVal(cty.String)),
		"instance_state":                       c.computed(creating, str("running")),
		"instance_type":                        str(c.pick("t3.micro", "t3.large", "m5.xlarge", "c6i.2xlarge")),
		"ipv6_address_count":                   c.computed(creating, cty.NumberIntVal(0)),
		"ipv6_addresses":                       c.computed(creating, cty.ListValEmpty(cty.String)),
		"key_name":                             str("deploy"),
		"metadata_options": c.computed(creating, cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{
			"http_endpoint": str("enabled"), "http_protocol_ipv6": str("disabled"),
			"http_put_response_hop_limit": cty.NumberIntVal(1), "http_tokens": str("required"),
			"instance_metadata_tags": str("disabled"),
		})})),
		"monitoring": cty.BoolVal(c.r.IntN(2) == 0),
		"network_interface": c.computed(creating, cty.SetValEmpty(obj(map[string]cty.Type{
			"delete_on_termination": cty.Bool, "device_index": cty.Number,
			"network_card_index": cty.Number, "network_interface_id": cty.String,
		}))),
		"outpost_arn":                  c.computed(creating, cty.NullVal(cty.String)),
		"password_data":                c.computed(creating, str("")),
		"placement_group":              c.computed(creating, str("")),
		"placement_partition_number":   c.computed(creating, cty.NumberIntVal(0)),
		"primary_network_interface_id": c.computed(creating, str(c.hexid("eni-", 17))),
		"private_dns":                  c.computed(creating, str("ip-"+strings.ReplaceAll(privIP, ".", "-")+".ec2.internal")),
		"private_ip":                   c.computed(creating, str(privIP)),
		"public_dns":                   c.computed(creating, str("")),
		"public_ip":                    c.computed(creating, str("")),
		"root_block_device":            cty.ListVal([]cty.Value{c.ebs(creating, true)}),
		"secondary_private_ips":        c.computed(creating, cty.SetValEmpty(cty.String)),
		"security_groups":              c.computed(creating, cty.SetValEmpty(cty.String)),
		"source_dest_check":            cty.True,
		"spot_instance_request_id":     c.computed(creating, cty.NullVal(cty.String)),
		"subnet_id":                    str(c.hexid("subnet-", 17)),
		"tags":                         tg,
		"tags_all":                     c.computed(creating, tg),
		"tenancy":                      c.computed(creating, str("default")),
		"timeouts":                     cty.NullVal(obj(map[string]cty.Type{"create": cty.String, "delete": cty.String, "update": cty.String})),
		"user_data":                    ud,
		"user_data_base64":             cty.NullVal(cty.String),
		"user_data_replace_on_change":  cty.False,
		"volume_tags":                  cty.NullVal(tags),
		"vpc_security_group_ids":       cty.SetVal(sgs),
	})
}

func (c *corpusGen) rule() cty.Value {
	port := int64([]int{22, 80, 443, 5432, 6379, 8080, 0}[c.r.IntN(7)])
	var cidrs []cty.Value
	for i := 0; i < 1+c.r.IntN(5); i++ {
		cidrs = append(cidrs, cty.StringVal(fmt.Sprintf("10.%d.%d.0/24", c.r.IntN(256), c.r.IntN(256))))
	}
	return cty.ObjectVal(map[string]cty.Value{
		"cidr_blocks": cty.ListVal(cidrs), "description": cty.StringVal(c.pick("", "https", "ssh from bastion", "app")),
		"from_port": cty.NumberIntVal(port), "ipv6_cidr_blocks": cty.ListValEmpty(cty.String),
		"prefix_list_ids": cty.ListValEmpty(cty.String), "protocol": cty.StringVal(c.pick("tcp", "udp", "-1")),
		"security_groups": cty.SetValEmpty(cty.String), "self": cty.False, "to_port": cty.NumberIntVal(port),
	})
}

func (c *corpusGen) securityGroup(creating bool) cty.Value {
	id := c.hexid("sg-", 17)
	var in, out []cty.Value
	for i := 0; i < 1+c.r.IntN(6); i++ {
		in = append(in, c.rule())
	}
	out = append(out, c.rule())
	tg := c.tagMap(2 + c.r.IntN(4))
	return cty.ObjectVal(map[string]cty.Value{
		"arn":         c.computed(creating, cty.StringVal("arn:aws:ec2:us-east-1:123456789012:security-group/"+id)),
		"description": cty.StringVal("Managed by OpenTofu"), "egress": cty.SetVal(out),
		"id": c.computed(creating, cty.StringVal(id)), "ingress": cty.SetVal(in),
		"name": cty.StringVal(c.hexid("app-sg-", 8)), "name_prefix": c.computed(creating, cty.StringVal("")),
		"owner_id":               c.computed(creating, cty.StringVal("123456789012")),
		"revoke_rules_on_delete": cty.False, "tags": tg, "tags_all": c.computed(creating, tg),
		"vpc_id":   cty.StringVal(c.hexid("vpc-", 17)),
		"timeouts": cty.NullVal(obj(map[string]cty.Type{"create": cty.String, "delete": cty.String})),
	})
}

func (c *corpusGen) iamPolicy(creating bool) cty.Value {
	var stmts []string
	for i := 0; i < 1+c.r.IntN(8); i++ {
		stmts = append(stmts, fmt.Sprintf(`{"Sid":"S%d","Effect":"Allow","Action":["s3:GetObject","s3:PutObject","s3:ListBucket"],"Resource":["arn:aws:s3:::%s","arn:aws:s3:::%s/*"]}`,
			i, c.hexid("bucket-", 8), c.hexid("bucket-", 8)))
	}
	policy := `{"Version":"2012-10-17","Statement":[` + strings.Join(stmts, ",") + `]}`
	name := c.hexid("policy-", 8)
	tg := c.tagMap(c.r.IntN(4))
	return cty.ObjectVal(map[string]cty.Value{
		"arn":              c.computed(creating, cty.StringVal("arn:aws:iam::123456789012:policy/"+name)),
		"attachment_count": c.computed(creating, cty.NumberIntVal(int64(c.r.IntN(5)))),
		"description":      cty.StringVal("grants the app its buckets"), "id": c.computed(creating, cty.StringVal(name)),
		"name": cty.StringVal(name), "name_prefix": c.computed(creating, cty.StringVal("")),
		"path": cty.StringVal("/"), "policy": cty.StringVal(policy),
		"policy_id": c.computed(creating, cty.StringVal(c.hexid("ANPA", 17))), "tags": tg,
		"tags_all": c.computed(creating, tg),
	})
}

// plannedStates returns n planned states: a mix of resource types, half of
// them being created (many unknowns), half updated (mostly known).
func plannedStates(seed uint64, n int) []frame {
	c := &corpusGen{r: rand.New(rand.NewPCG(seed, 1))}
	out := make([]frame, 0, n)
	for i := 0; i < n; i++ {
		creating := c.r.IntN(2) == 0
		var ty cty.Type
		var v cty.Value
		switch w := c.r.IntN(100); {
		case w < 60:
			ty, v = instanceType, c.instance(creating)
		case w < 85:
			ty, v = securityGroupType, c.securityGroup(creating)
		default:
			ty, v = iamPolicyType, c.iamPolicy(creating)
		}
		out = append(out, mustFrame(ty, v))
	}
	return out
}

// ---- (b) one very large schema-shaped value --------------------------------

var (
	attrSchema = obj(map[string]cty.Type{
		"type": cty.DynamicPseudoType, "description": cty.String, "description_kind": cty.String,
		"required": cty.Bool, "optional": cty.Bool, "computed": cty.Bool, "sensitive": cty.Bool,
		"deprecated": cty.Bool, "default": cty.DynamicPseudoType,
	})
	innerBlock = obj(map[string]cty.Type{
		"attributes": cty.Map(attrSchema), "description": cty.String,
	})
	blockSchema = obj(map[string]cty.Type{
		"attributes": cty.Map(attrSchema),
		"block_types": cty.Map(obj(map[string]cty.Type{
			"nesting_mode": cty.String, "min_items": cty.Number, "max_items": cty.Number,
			"block": innerBlock,
		})),
		"description": cty.String, "description_kind": cty.String,
	})
	versioned      = obj(map[string]cty.Type{"version": cty.Number, "block": blockSchema})
	schemaDocument = obj(map[string]cty.Type{
		"format_version": cty.String,
		"provider_schemas": cty.Map(obj(map[string]cty.Type{
			"provider":            versioned,
			"resource_schemas":    cty.Map(versioned),
			"data_source_schemas": cty.Map(versioned),
		})),
	})
)

var words = strings.Fields(`the of a to identifier resource name region tags value ARN list set map
	configuration enable disable default when specified must be unique within account this
	attribute block nested computed optional required number string bool seconds minutes`)

func (c *corpusGen) sentence(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = words[c.r.IntN(len(words))]
	}
	return strings.Join(w, " ") + "."
}

// attr returns one attribute's schema. Its two dynamic fields always hold
// strings: every element of a cty map must have one type, here across the
// whole document.
func (c *corpusGen) attr(kind int) cty.Value {
	var ty, def cty.Value
	switch kind {
	case 0:
		ty, def = cty.StringVal("number"), cty.StringVal(fmt.Sprint(c.r.IntN(1000)))
	case 1:
		ty, def = cty.StringVal(`["map","string"]`), cty.NullVal(cty.String)
	case 2:
		ty, def = cty.StringVal(`["list","string"]`), cty.StringVal(`["a","b"]`)
	case 3:
		ty, def = cty.StringVal("bool"), cty.StringVal("false")
	default:
		ty, def = cty.StringVal("string"), cty.StringVal(c.hexid("default-", 6))
	}
	required := c.r.IntN(4) == 0
	return cty.ObjectVal(map[string]cty.Value{
		"type": ty, "description": cty.StringVal(c.sentence(8 + c.r.IntN(30))),
		"description_kind": cty.StringVal("plain"), "required": cty.BoolVal(required),
		"optional": cty.BoolVal(!required), "computed": cty.BoolVal(c.r.IntN(3) == 0),
		"sensitive": cty.BoolVal(c.r.IntN(20) == 0), "deprecated": cty.False, "default": def,
	})
}

func (c *corpusGen) attrs(n int) cty.Value {
	m := make(map[string]cty.Value, n)
	kind := c.r.IntN(6)
	for len(m) < n {
		m[c.hexid("attr_", 8)] = c.attr(kind)
	}
	return cty.MapVal(m)
}

func (c *corpusGen) block() cty.Value {
	// At least one nested block: go-cty decodes an empty map whose element
	// type has dynamic positions with a type unlike its non-empty siblings'
	// and then panics, so the reference could not run.
	bts := map[string]cty.Value{}
	for n := 1 + c.r.IntN(3); len(bts) < n; {
		bts[c.hexid("block_", 6)] = cty.ObjectVal(map[string]cty.Value{
			"nesting_mode": cty.StringVal(c.pick("list", "set", "single")),
			"min_items":    cty.NumberIntVal(0), "max_items": cty.NumberIntVal(int64(c.r.IntN(2))),
			"block": cty.ObjectVal(map[string]cty.Value{
				"attributes": c.attrs(2 + c.r.IntN(8)), "description": cty.StringVal(c.sentence(10)),
			}),
		})
	}
	return cty.ObjectVal(map[string]cty.Value{
		"attributes": c.attrs(10 + c.r.IntN(50)), "block_types": cty.MapVal(bts),
		"description": cty.StringVal(c.sentence(20)), "description_kind": cty.StringVal("plain"),
	})
}

// schemaValue returns one value of about the given size in bytes.
func schemaValue(seed uint64, target int) frame {
	c := &corpusGen{r: rand.New(rand.NewPCG(seed, 2))}
	versionedBlock := func() cty.Value {
		return cty.ObjectVal(map[string]cty.Value{"version": cty.NumberIntVal(int64(c.r.IntN(3))), "block": c.block()})
	}
	providers := map[string]cty.Value{}
	size := 0
	for p := 0; size < target; p++ {
		res, ds := map[string]cty.Value{}, map[string]cty.Value{}
		for i := 0; i < 200; i++ {
			res[fmt.Sprintf("p%d_resource_%d", p, i)] = versionedBlock()
		}
		for i := 0; i < 60; i++ {
			ds[fmt.Sprintf("p%d_data_%d", p, i)] = versionedBlock()
		}
		pv := cty.ObjectVal(map[string]cty.Value{
			"provider": versionedBlock(), "resource_schemas": cty.MapVal(res), "data_source_schemas": cty.MapVal(ds),
		})
		providers[fmt.Sprintf("registry.opentofu.org/example/p%d", p)] = pv
		// Size this provider alone to know when to stop.
		f := mustFrame(schemaDocument.AttributeType("provider_schemas").ElementType(), pv)
		size += len(f.payload)
	}
	return mustFrame(schemaDocument, cty.ObjectVal(map[string]cty.Value{
		"format_version": cty.StringVal("1.0"), "provider_schemas": cty.MapVal(providers),
	}))
}
