/* Real serialized protocol-5 messages for the store tests, built with the
 * protobuf-c generated code and msgpack-c's packer. */
#ifndef TFTAP_TESTS_STORE_FIXTURES_H
#define TFTAP_TESTS_STORE_FIXTURES_H

#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "tfplugin5.pb-c.h"

/* A secret that must never reach the database files. */
#define FX_SECRET "hunter2-Zq81-never-stored"

struct fx_bytes {
    uint8_t *p;
    size_t n;
};

static void fx_free(struct fx_bytes *b)
{
    free(b->p);
    b->p = NULL;
    b->n = 0;
}

static struct fx_bytes fx_pack_msg(const ProtobufCMessage *m)
{
    struct fx_bytes b;
    b.n = protobuf_c_message_get_packed_size(m);
    b.p = malloc(b.n ? b.n : 1);
    protobuf_c_message_pack(m, b.p);
    return b;
}

static Tfplugin5__Schema__Attribute *fx_attr(const char *name, const char *type, int computed,
                                             int sensitive)
{
    Tfplugin5__Schema__Attribute *a = malloc(sizeof *a);
    tfplugin5__schema__attribute__init(a);
    a->name = (char *)name;
    a->type.data = (uint8_t *)type;
    a->type.len = strlen(type);
    a->optional = !computed;
    a->computed = computed;
    a->sensitive = sensitive;
    return a;
}

/* Resource "test_thing": id (computed), name, password (sensitive), size,
 * tags (map of string), and a LIST block "rule" {port, proto}. The extra
 * attribute name lets two tests make two different schemas. */
static struct fx_bytes fx_schema_response(const char *extra_attr)
{
    Tfplugin5__Schema__Attribute *rule_attrs[2] = {fx_attr("port", "\"number\"", 0, 0),
                                                   fx_attr("proto", "\"string\"", 0, 0)};
    Tfplugin5__Schema__Block rule_block = TFPLUGIN5__SCHEMA__BLOCK__INIT;
    rule_block.n_attributes = 2;
    rule_block.attributes = rule_attrs;
    Tfplugin5__Schema__NestedBlock rule = TFPLUGIN5__SCHEMA__NESTED_BLOCK__INIT;
    rule.type_name = "rule";
    rule.block = &rule_block;
    rule.nesting = TFPLUGIN5__SCHEMA__NESTED_BLOCK__NESTING_MODE__LIST;
    Tfplugin5__Schema__NestedBlock *blocks[1] = {&rule};

    Tfplugin5__Schema__Attribute *attrs[6] = {fx_attr("id", "\"string\"", 1, 0),
                                              fx_attr("name", "\"string\"", 0, 0),
                                              fx_attr("password", "\"string\"", 0, 1),
                                              fx_attr("size", "\"number\"", 0, 0),
                                              fx_attr("tags", "[\"map\",\"string\"]", 0, 0),
                                              NULL};
    size_t n_attrs = 5;
    if (extra_attr)
        attrs[n_attrs++] = fx_attr(extra_attr, "\"string\"", 0, 0);
    Tfplugin5__Schema__Block block = TFPLUGIN5__SCHEMA__BLOCK__INIT;
    block.n_attributes = n_attrs;
    block.attributes = attrs;
    block.n_block_types = 1;
    block.block_types = blocks;
    Tfplugin5__Schema schema = TFPLUGIN5__SCHEMA__INIT;
    schema.block = &block;

    Tfplugin5__Schema__Block pblock = TFPLUGIN5__SCHEMA__BLOCK__INIT;
    Tfplugin5__Schema pschema = TFPLUGIN5__SCHEMA__INIT;
    pschema.block = &pblock;

    Tfplugin5__GetProviderSchema__Response__ResourceSchemasEntry e =
        TFPLUGIN5__GET_PROVIDER_SCHEMA__RESPONSE__RESOURCE_SCHEMAS_ENTRY__INIT;
    e.key = "test_thing";
    e.value = &schema;
    Tfplugin5__GetProviderSchema__Response__ResourceSchemasEntry *entries[1] = {&e};
    Tfplugin5__GetProviderSchema__Response r = TFPLUGIN5__GET_PROVIDER_SCHEMA__RESPONSE__INIT;
    r.provider = &pschema;
    r.n_resource_schemas = 1;
    r.resource_schemas = entries;
    struct fx_bytes b = fx_pack_msg(&r.base);
    for (size_t i = 0; i < n_attrs; i++)
        free(attrs[i]);
    free(rule_attrs[0]);
    free(rule_attrs[1]);
    return b;
}

struct fx_thing {
    const char *id; /* NULL: unknown (with prefix "thing-" refinement) */
    const char *name;
    const char *password;
    int size;
    int n_rules;       /* rule[i] = {port: 80 + i, proto: "tcp"} */
    const char *extra; /* value of the extra attribute, if the schema has it */
    const char *extra_name;
};

static void fx_pack_str(msgpack_packer *pk, const char *s)
{
    msgpack_pack_str(pk, strlen(s));
    msgpack_pack_str_body(pk, s, strlen(s));
}

static void fx_pack_unknown_prefix(msgpack_packer *pk, const char *prefix)
{
    /* ext 12 carrying a refinement map {1: false (not null), 2: prefix} */
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer in;
    msgpack_packer_init(&in, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&in, 2);
    msgpack_pack_int(&in, 1);
    msgpack_pack_false(&in);
    msgpack_pack_int(&in, 2);
    fx_pack_str(&in, prefix);
    msgpack_pack_ext(pk, sb.size, 12);
    msgpack_pack_ext_body(pk, sb.data, sb.size);
    msgpack_sbuffer_destroy(&sb);
}

/* The object as go-cty encodes it: every attribute, keys sorted. */
static struct fx_bytes fx_thing_msgpack(const struct fx_thing *t)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    int extra = t->extra_name != NULL;
    msgpack_pack_map(&pk, 6 + extra);
    /* extra names used by the tests sort after "tags" ("zone"). */
    fx_pack_str(&pk, "id");
    if (t->id)
        fx_pack_str(&pk, t->id);
    else
        fx_pack_unknown_prefix(&pk, "thing-");
    fx_pack_str(&pk, "name");
    fx_pack_str(&pk, t->name);
    fx_pack_str(&pk, "password");
    if (t->password)
        fx_pack_str(&pk, t->password);
    else
        msgpack_pack_nil(&pk);
    fx_pack_str(&pk, "rule");
    msgpack_pack_array(&pk, (size_t)t->n_rules);
    for (int i = 0; i < t->n_rules; i++) {
        msgpack_pack_map(&pk, 2);
        fx_pack_str(&pk, "port");
        msgpack_pack_int(&pk, 80 + i);
        fx_pack_str(&pk, "proto");
        fx_pack_str(&pk, "tcp");
    }
    fx_pack_str(&pk, "size");
    msgpack_pack_int(&pk, t->size);
    fx_pack_str(&pk, "tags");
    msgpack_pack_map(&pk, 1);
    fx_pack_str(&pk, "env");
    fx_pack_str(&pk, "test");
    if (extra) {
        fx_pack_str(&pk, t->extra_name);
        fx_pack_str(&pk, t->extra ? t->extra : "");
    }
    struct fx_bytes b = {malloc(sb.size), sb.size};
    memcpy(b.p, sb.data, sb.size);
    msgpack_sbuffer_destroy(&sb);
    return b;
}

static struct fx_bytes fx_nil_msgpack(void)
{
    struct fx_bytes b = {malloc(1), 1};
    b.p[0] = 0xc0;
    return b;
}

static Tfplugin5__DynamicValue *fx_dv(Tfplugin5__DynamicValue *dv, struct fx_bytes *mp)
{
    tfplugin5__dynamic_value__init(dv);
    dv->msgpack.data = mp->p;
    dv->msgpack.len = mp->n;
    return dv;
}

/* PlanResourceChange request: prior (NULL = create) -> config/proposed. */
static struct fx_bytes fx_plan_request(const struct fx_thing *prior, const struct fx_thing *config)
{
    struct fx_bytes pm = prior ? fx_thing_msgpack(prior) : fx_nil_msgpack();
    struct fx_bytes cm = fx_thing_msgpack(config);
    Tfplugin5__DynamicValue dp, dc, dprop;
    Tfplugin5__PlanResourceChange__Request r = TFPLUGIN5__PLAN_RESOURCE_CHANGE__REQUEST__INIT;
    r.type_name = "test_thing";
    r.prior_state = fx_dv(&dp, &pm);
    r.config = fx_dv(&dc, &cm);
    r.proposed_new_state = fx_dv(&dprop, &cm);
    struct fx_bytes b = fx_pack_msg(&r.base);
    fx_free(&pm);
    fx_free(&cm);
    return b;
}

/* Response with planned state, optional requires_replace on .name and a
 * warning diagnostic. */
static struct fx_bytes fx_plan_response(const struct fx_thing *planned, int replace_name,
                                        const char *warning)
{
    struct fx_bytes pm = fx_thing_msgpack(planned);
    Tfplugin5__DynamicValue dp;
    Tfplugin5__PlanResourceChange__Response r = TFPLUGIN5__PLAN_RESOURCE_CHANGE__RESPONSE__INIT;
    r.planned_state = fx_dv(&dp, &pm);
    Tfplugin5__AttributePath__Step step = TFPLUGIN5__ATTRIBUTE_PATH__STEP__INIT;
    step.selector_case = TFPLUGIN5__ATTRIBUTE_PATH__STEP__SELECTOR_ATTRIBUTE_NAME;
    step.attribute_name = "name";
    Tfplugin5__AttributePath__Step *steps[1] = {&step};
    Tfplugin5__AttributePath path = TFPLUGIN5__ATTRIBUTE_PATH__INIT;
    path.n_steps = 1;
    path.steps = steps;
    Tfplugin5__AttributePath *paths[1] = {&path};
    if (replace_name) {
        r.n_requires_replace = 1;
        r.requires_replace = paths;
    }
    Tfplugin5__Diagnostic d = TFPLUGIN5__DIAGNOSTIC__INIT;
    Tfplugin5__Diagnostic *diags[1] = {&d};
    if (warning) {
        d.severity = TFPLUGIN5__DIAGNOSTIC__SEVERITY__WARNING;
        d.summary = (char *)warning;
        d.detail = "detail text";
        r.n_diagnostics = 1;
        r.diagnostics = diags;
    }
    struct fx_bytes b = fx_pack_msg(&r.base);
    fx_free(&pm);
    return b;
}

/* ApplyResourceChange of a create: planned -> new state. */
static void fx_apply(const struct fx_thing *planned, const struct fx_thing *created,
                     struct fx_bytes *req, struct fx_bytes *resp)
{
    struct fx_bytes pr = fx_nil_msgpack(), pm = fx_thing_msgpack(planned);
    struct fx_bytes nm = fx_thing_msgpack(created);
    Tfplugin5__DynamicValue d1, d2, d3, d4;
    Tfplugin5__ApplyResourceChange__Request q = TFPLUGIN5__APPLY_RESOURCE_CHANGE__REQUEST__INIT;
    q.type_name = "test_thing";
    q.prior_state = fx_dv(&d1, &pr);
    q.planned_state = fx_dv(&d2, &pm);
    q.config = fx_dv(&d3, &pm);
    *req = fx_pack_msg(&q.base);
    Tfplugin5__ApplyResourceChange__Response r = TFPLUGIN5__APPLY_RESOURCE_CHANGE__RESPONSE__INIT;
    r.new_state = fx_dv(&d4, &nm);
    *resp = fx_pack_msg(&r.base);
    fx_free(&pr);
    fx_free(&pm);
    fx_free(&nm);
}

#endif
