/* Schema model tests: real GetProviderSchema / GetResourceIdentitySchemas
 * responses packed with protobuf-c's generated code, and a `tofu providers
 * schema -json` document, turned into the types their blocks imply. */
#include <stdlib.h>
#include <string.h>

#include "decoder/decoder_int.h"
#include "decoder/schema_int.h"
#include "tests/check.h"
#include "tfplugin5.pb-c.h"
#include "tfplugin6.pb-c.h"

/* ---- building protocol-6 schemas ------------------------------------------ */

/* Everything the builders allocate, freed at the end. */
static void *allocs[4096];
static size_t nallocs;

static void *tmem(size_t n)
{
    void *p = calloc(1, n);
    if (!p || nallocs == sizeof allocs / sizeof allocs[0])
        abort();
    allocs[nallocs++] = p;
    return p;
}

static void tmem_free(void)
{
    while (nallocs)
        free(allocs[--nallocs]);
}

static void *dup_ptrs(void *const *v, size_t n)
{
    void **p = tmem(n * sizeof *p + 1);
    memcpy(p, v, n * sizeof *p);
    return p;
}

#define NARGS(...) (sizeof((void *[]){__VA_ARGS__}) / sizeof(void *))
#define ARR(...) NARGS(__VA_ARGS__), dup_ptrs((void *[]){__VA_ARGS__}, NARGS(__VA_ARGS__))
#define NONE 0, NULL

enum { SENS = 1, WO = 2 };

static Tfplugin6__Schema__Attribute *a6(const char *name, const char *type, unsigned flags)
{
    Tfplugin6__Schema__Attribute *a = tmem(sizeof *a);
    tfplugin6__schema__attribute__init(a);
    a->name = (char *)name;
    a->type.data = (uint8_t *)type;
    a->type.len = strlen(type);
    a->sensitive = (flags & SENS) != 0;
    a->write_only = (flags & WO) != 0;
    a->optional = 1;
    return a;
}

static Tfplugin6__Schema__Attribute *a6n(const char *name, int nesting, size_t n, void *attrs)
{
    Tfplugin6__Schema__Attribute *a = tmem(sizeof *a);
    tfplugin6__schema__attribute__init(a);
    a->name = (char *)name;
    a->nested_type = tmem(sizeof *a->nested_type);
    tfplugin6__schema__object__init(a->nested_type);
    a->nested_type->nesting = nesting;
    a->nested_type->n_attributes = n;
    a->nested_type->attributes = attrs;
    return a;
}

static Tfplugin6__Schema__Block *b6(size_t na, void *attrs, size_t nb, void *blocks)
{
    Tfplugin6__Schema__Block *b = tmem(sizeof *b);
    tfplugin6__schema__block__init(b);
    b->n_attributes = na;
    b->attributes = attrs;
    b->n_block_types = nb;
    b->block_types = blocks;
    return b;
}

static Tfplugin6__Schema__NestedBlock *nb6(const char *name, int nesting,
                                           Tfplugin6__Schema__Block *blk)
{
    Tfplugin6__Schema__NestedBlock *n = tmem(sizeof *n);
    tfplugin6__schema__nested_block__init(n);
    n->type_name = (char *)name;
    n->nesting = nesting;
    n->block = blk;
    return n;
}

static Tfplugin6__Schema *s6(Tfplugin6__Schema__Block *blk)
{
    Tfplugin6__Schema *s = tmem(sizeof *s);
    tfplugin6__schema__init(s);
    s->block = blk;
    return s;
}

static Tfplugin6__GetProviderSchema__Response__ResourceSchemasEntry *entry6(const char *k,
                                                                            Tfplugin6__Schema *v)
{
    /* Every map<string, Schema> entry type has the same layout. */
    Tfplugin6__GetProviderSchema__Response__ResourceSchemasEntry *e = tmem(sizeof *e);
    tfplugin6__get_provider_schema__response__resource_schemas_entry__init(e);
    e->key = (char *)k;
    e->value = v;
    return e;
}

static void *entry6_as(const ProtobufCMessageDescriptor *d,
                       Tfplugin6__GetProviderSchema__Response__ResourceSchemasEntry *e)
{
    e->base.descriptor = d;
    return e;
}

/* With TFTAP_SEED_DIR set, responses are also written as seeds for
 * tests/fuzz/fuzz_message under the given selector. */
static void write_seed(const char *selector, const uint8_t *p, size_t n)
{
    static int counter;
    const char *dir = getenv("TFTAP_SEED_DIR");
    if (!dir)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-%03d", dir, selector, counter++);
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    fprintf(f, "%s\n", selector);
    fwrite(p, 1, n, f);
    fclose(f);
}

static uint8_t *pack(const ProtobufCMessage *m, size_t *len)
{
    *len = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = tmem(*len + 1);
    protobuf_c_message_pack(m, buf);
    const char *name = m->descriptor->name;
    if (strcmp(name, "tfplugin6.GetProviderSchema.Response") == 0)
        write_seed("schema6", buf, *len);
    else if (strcmp(name, "tfplugin5.GetProviderSchema.Response") == 0)
        write_seed("schema5", buf, *len);
    else if (strcmp(name, "tfplugin6.GetResourceIdentitySchemas.Response") == 0)
        write_seed("identities6", buf, *len);
    return buf;
}

static char *type_json(const dec_type *t)
{
    static tftap_buf b;
    tftap_buf_reset(&b);
    if (!t)
        return "(none)";
    dec_type_to_json(t, &b);
    return (char *)tftap_buf_cstr(&b);
}

static const struct dec_attr *attr(const dec_type *t, const char *name)
{
    return t && t->kind == DEC_OBJECT ? dec_type_attr(t, name, strlen(name)) : NULL;
}

#define M6(kind) TFPLUGIN6__SCHEMA__NESTED_BLOCK__NESTING_MODE__##kind
#define O6(kind) TFPLUGIN6__SCHEMA__OBJECT__NESTING_MODE__##kind

/* The resource schema used by most tests: every nesting mode of blocks and
 * nested attributes, sensitive and write-only attributes. */
static Tfplugin6__Schema *thing_schema(void)
{
    Tfplugin6__Schema__Block *inner_set = b6(ARR(a6("d", "\"string\"", 0)), NONE);
    return s6(b6(ARR(a6("id", "\"string\"", 0), a6("password", "\"string\"", SENS),
                     a6("secret_wo", "\"string\"", WO), a6("tags", "[\"map\",\"string\"]", 0),
                     a6n("rules", O6(LIST),
                         ARR(a6("port", "\"number\"", 0), a6("note", "\"string\"", SENS))),
                     a6n("single_nested", O6(SINGLE), ARR(a6("x", "\"string\"", 0))),
                     a6n("set_nested", O6(SET), ARR(a6("y", "\"bool\"", 0))),
                     a6n("map_nested", O6(MAP), ARR(a6("z", "\"number\"", WO)))),
                 ARR(nb6("single_blk", M6(SINGLE), b6(ARR(a6("a", "\"string\"", SENS)), NONE)),
                     nb6("group_blk", M6(GROUP), b6(ARR(a6("b", "\"bool\"", 0)), NONE)),
                     nb6("list_blk", M6(LIST),
                         b6(ARR(a6("c", "\"number\"", 0)), ARR(nb6("inner", M6(SET), inner_set)))),
                     nb6("set_blk", M6(SET), b6(ARR(a6("d", "\"string\"", 0)), NONE)),
                     nb6("map_blk", M6(MAP), b6(ARR(a6("e", "\"string\"", 0)), NONE)),
                     nb6("dyn_list", M6(LIST), b6(ARR(a6("v", "\"dynamic\"", 0)), NONE)),
                     nb6("dyn_map", M6(MAP), b6(ARR(a6("v", "[\"list\",\"dynamic\"]", 0)), NONE)),
                     nb6("empty_single", M6(SINGLE), NULL),
                     /* Same name as an attribute: ignored, the attribute stays. */
                     nb6("tags", M6(LIST), b6(ARR(a6("k", "\"string\"", 0)), NONE)),
                     /* An invalid nesting mode adds nothing. */
                     nb6("invalid_blk", M6(INVALID), b6(NONE, NONE)))));
}

#define THING_TYPE                                                                                 \
    "[\"object\",{\"dyn_list\":\"dynamic\",\"dyn_map\":\"dynamic\","                               \
    "\"empty_single\":[\"object\",{}],"                                                            \
    "\"group_blk\":[\"object\",{\"b\":\"bool\"}],\"id\":\"string\","                               \
    "\"list_blk\":[\"list\",[\"object\",{\"c\":\"number\","                                        \
    "\"inner\":[\"set\",[\"object\",{\"d\":\"string\"}]]}]],"                                      \
    "\"map_blk\":[\"map\",[\"object\",{\"e\":\"string\"}]],"                                       \
    "\"map_nested\":[\"map\",[\"object\",{\"z\":\"number\"}]],\"password\":\"string\","            \
    "\"rules\":[\"list\",[\"object\",{\"note\":\"string\",\"port\":\"number\"}]],"                 \
    "\"secret_wo\":\"string\",\"set_blk\":[\"set\",[\"object\",{\"d\":\"string\"}]],"              \
    "\"set_nested\":[\"set\",[\"object\",{\"y\":\"bool\"}]],"                                      \
    "\"single_blk\":[\"object\",{\"a\":\"string\"}],"                                              \
    "\"single_nested\":[\"object\",{\"x\":\"string\"}],\"tags\":[\"map\",\"string\"]}]"

static uint8_t *provider_schema6(size_t *len)
{
    Tfplugin6__GetProviderSchema__Response *r = tmem(sizeof *r);
    tfplugin6__get_provider_schema__response__init(r);
    r->provider = s6(b6(ARR(a6("region", "\"string\"", 0), a6("token", "\"string\"", SENS)), NONE));
    r->provider_meta = s6(b6(ARR(a6("module_name", "\"string\"", 0)), NONE));
    r->n_resource_schemas = 2;
    r->resource_schemas = dup_ptrs(
        (void *[]){entry6("test_thing", thing_schema()), entry6("test_plain", s6(NULL))}, 2);
    r->n_data_source_schemas = 1;
    r->data_source_schemas = dup_ptrs(
        (void *[]){entry6_as(
            &tfplugin6__get_provider_schema__response__data_source_schemas_entry__descriptor,
            entry6("test_ds", s6(b6(ARR(a6("q", "\"string\"", 0)), NONE))))},
        1);
    r->n_ephemeral_resource_schemas = 1;
    r->ephemeral_resource_schemas = dup_ptrs(
        (void *[]){entry6_as(
            &tfplugin6__get_provider_schema__response__ephemeral_resource_schemas_entry__descriptor,
            entry6("test_eph", s6(b6(ARR(a6("secret", "\"string\"", SENS)), NONE))))},
        1);
    r->n_list_resource_schemas = 1;
    r->list_resource_schemas = dup_ptrs(
        (void *[]){entry6_as(
            &tfplugin6__get_provider_schema__response__list_resource_schemas_entry__descriptor,
            entry6("test_thing", s6(b6(ARR(a6("filter", "\"string\"", 0)), NONE))))},
        1);
    Tfplugin6__ActionSchema *act = tmem(sizeof *act);
    tfplugin6__action_schema__init(act);
    act->schema = s6(b6(ARR(a6("message", "\"string\"", 0)), NONE));
    Tfplugin6__GetProviderSchema__Response__ActionSchemasEntry *ae = tmem(sizeof *ae);
    tfplugin6__get_provider_schema__response__action_schemas_entry__init(ae);
    ae->key = "test_act";
    ae->value = act;
    r->n_action_schemas = 1;
    r->action_schemas = dup_ptrs((void *[]){ae}, 1);

    Tfplugin6__Function__Parameter *p1 = tmem(sizeof *p1), *pv = tmem(sizeof *pv);
    tfplugin6__function__parameter__init(p1);
    tfplugin6__function__parameter__init(pv);
    p1->name = "s";
    p1->type = (ProtobufCBinaryData){8, (uint8_t *)"\"string\""};
    pv->name = "rest";
    pv->type = (ProtobufCBinaryData){8, (uint8_t *)"\"number\""};
    Tfplugin6__Function__Return *ret = tmem(sizeof *ret);
    tfplugin6__function__return__init(ret);
    ret->type = (ProtobufCBinaryData){17, (uint8_t *)"[\"list\",\"string\"]"};
    Tfplugin6__Function *fn = tmem(sizeof *fn);
    tfplugin6__function__init(fn);
    fn->n_parameters = 1;
    fn->parameters = dup_ptrs((void *[]){p1}, 1);
    fn->variadic_parameter = pv;
    fn->return_ = ret;
    Tfplugin6__GetProviderSchema__Response__FunctionsEntry *fe = tmem(sizeof *fe);
    tfplugin6__get_provider_schema__response__functions_entry__init(fe);
    fe->key = "echo";
    fe->value = fn;
    r->n_functions = 1;
    r->functions = dup_ptrs((void *[]){fe}, 1);
    return pack(&r->base, len);
}

static uint8_t *identity_schemas6(size_t *len)
{
    Tfplugin6__ResourceIdentitySchema__IdentityAttribute *ia = tmem(sizeof *ia),
                                                         *ib = tmem(sizeof *ib);
    tfplugin6__resource_identity_schema__identity_attribute__init(ia);
    tfplugin6__resource_identity_schema__identity_attribute__init(ib);
    ia->name = "id";
    ia->type = (ProtobufCBinaryData){8, (uint8_t *)"\"string\""};
    ia->required_for_import = 1;
    ib->name = "region";
    ib->type = (ProtobufCBinaryData){8, (uint8_t *)"\"string\""};
    Tfplugin6__ResourceIdentitySchema *ids = tmem(sizeof *ids);
    tfplugin6__resource_identity_schema__init(ids);
    ids->version = 1;
    ids->n_identity_attributes = 2;
    ids->identity_attributes = dup_ptrs((void *[]){ia, ib}, 2);
    Tfplugin6__GetResourceIdentitySchemas__Response__IdentitySchemasEntry *e = tmem(sizeof *e);
    tfplugin6__get_resource_identity_schemas__response__identity_schemas_entry__init(e);
    e->key = "test_thing";
    e->value = ids;
    Tfplugin6__GetResourceIdentitySchemas__Response *r = tmem(sizeof *r);
    tfplugin6__get_resource_identity_schemas__response__init(r);
    r->n_identity_schemas = 1;
    r->identity_schemas = dup_ptrs((void *[]){e}, 1);
    return pack(&r->base, len);
}

static void test_v6_schema(void)
{
    size_t len;
    uint8_t *bytes = provider_schema6(&len);
    dec_schema *s = NULL;
    dec_error err = DEC_ERROR_INIT;
    CHECK_INT_EQ(dec_schema_from_provider_schema(6, bytes, len, NULL, &s, &err), 0);
    CHECK(err.code == 0);
    const dec_type *thing = dec_schema_lookup(s, DEC_SCHEMA_RESOURCE, "test_thing");
    CHECK_STR_EQ(type_json(thing), THING_TYPE);
    CHECK_STR_EQ(type_json(dec_schema_lookup(s, DEC_SCHEMA_RESOURCE, "test_plain")),
                 "[\"object\",{}]");
    CHECK_STR_EQ(type_json(dec_schema_lookup(s, DEC_SCHEMA_PROVIDER, NULL)),
                 "[\"object\",{\"region\":\"string\",\"token\":\"string\"}]");
    CHECK_STR_EQ(type_json(dec_schema_lookup(s, DEC_SCHEMA_PROVIDER_META, "ignored")),
                 "[\"object\",{\"module_name\":\"string\"}]");
    CHECK_STR_EQ(type_json(dec_schema_lookup(s, DEC_SCHEMA_DATA_SOURCE, "test_ds")),
                 "[\"object\",{\"q\":\"string\"}]");
    CHECK_STR_EQ(type_json(dec_schema_lookup(s, DEC_SCHEMA_EPHEMERAL, "test_eph")),
                 "[\"object\",{\"secret\":\"string\"}]");
    CHECK_STR_EQ(type_json(dec_schema_lookup(s, DEC_SCHEMA_LIST_RESOURCE, "test_thing")),
                 "[\"object\",{\"filter\":\"string\"}]");
    CHECK_STR_EQ(type_json(dec_schema_lookup(s, DEC_SCHEMA_ACTION, "test_act")),
                 "[\"object\",{\"message\":\"string\"}]");
    CHECK(dec_schema_lookup(s, DEC_SCHEMA_RESOURCE, "test_ds") == NULL);
    CHECK(dec_schema_lookup(s, DEC_SCHEMA_DATA_SOURCE, "test_thing") == NULL);
    CHECK(dec_schema_lookup(s, DEC_SCHEMA_RESOURCE, NULL) == NULL);
    CHECK(dec_schema_lookup(s, DEC_SCHEMA_IDENTITY, "test_thing") == NULL);
    CHECK(dec_schema_lookup(NULL, DEC_SCHEMA_RESOURCE, "test_thing") == NULL);

    /* Sensitive and write-only marks, at the top and inside nesting. */
    CHECK(attr(thing, "password") && attr(thing, "password")->sensitive);
    CHECK(attr(thing, "password") && !attr(thing, "password")->write_only);
    CHECK(attr(thing, "secret_wo") && attr(thing, "secret_wo")->write_only);
    CHECK(attr(thing, "secret_wo") && !attr(thing, "secret_wo")->sensitive);
    CHECK(attr(thing, "id") && !attr(thing, "id")->sensitive && !attr(thing, "id")->write_only);
    const struct dec_attr *rules = attr(thing, "rules");
    CHECK(rules && rules->type->kind == DEC_LIST);
    CHECK(rules && attr(rules->type->elem, "note")->sensitive);
    CHECK(rules && !attr(rules->type->elem, "port")->sensitive);
    const struct dec_attr *mn = attr(thing, "map_nested");
    CHECK(mn && attr(mn->type->elem, "z")->write_only);
    const struct dec_attr *sb = attr(thing, "single_blk");
    CHECK(sb && attr(sb->type, "a")->sensitive);
    CHECK(attr(dec_schema_lookup(s, DEC_SCHEMA_PROVIDER, NULL), "token")->sensitive);

    /* Functions keep their signature for CallFunction. */
    const struct dec_function *fn = dec_schema_function(s, "echo");
    CHECK(fn != NULL);
    if (fn) {
        CHECK_INT_EQ(fn->nparams, 1);
        CHECK_STR_EQ(type_json(dec_function_arg_type(fn, 0)), "\"string\"");
        CHECK_STR_EQ(type_json(dec_function_arg_type(fn, 1)), "\"number\"");
        CHECK_STR_EQ(type_json(dec_function_arg_type(fn, 7)), "\"number\"");
        CHECK_STR_EQ(type_json(fn->ret), "[\"list\",\"string\"]");
    }
    CHECK(dec_schema_function(s, "nope") == NULL);

    /* Identity schemas arrive from their own call. */
    uint8_t *ids = identity_schemas6(&len);
    CHECK_INT_EQ(dec_schema_add_identities(s, 6, ids, len, &err), 0);
    CHECK_STR_EQ(type_json(dec_schema_lookup(s, DEC_SCHEMA_IDENTITY, "test_thing")),
                 "[\"object\",{\"id\":\"string\",\"region\":\"string\"}]");
    /* Adding again replaces, not duplicates. */
    CHECK_INT_EQ(dec_schema_add_identities(s, 6, ids, len, &err), 0);
    CHECK_STR_EQ(type_json(dec_schema_lookup(s, DEC_SCHEMA_IDENTITY, "test_thing")),
                 "[\"object\",{\"id\":\"string\",\"region\":\"string\"}]");
    CHECK_STR_EQ(type_json(dec_schema_lookup(s, DEC_SCHEMA_RESOURCE, "test_plain")),
                 "[\"object\",{}]");
    /* Garbage identities fail and leave the schema as it was. */
    CHECK_INT_EQ(dec_schema_add_identities(s, 6, "\x0a\x05\x0a", 3, &err), TFTAP_EDECODE);
    dec_error_done(&err);
    CHECK(dec_schema_lookup(s, DEC_SCHEMA_IDENTITY, "test_thing") != NULL);
    dec_schema_free(s);
    tmem_free();
}

/* ---- protocol 5 ----------------------------------------------------------- */

static void test_v5_schema(void)
{
    Tfplugin5__Schema__Attribute *id = tmem(sizeof *id), *wo = tmem(sizeof *wo),
                                 *pw = tmem(sizeof *pw), *n = tmem(sizeof *n);
    tfplugin5__schema__attribute__init(id);
    tfplugin5__schema__attribute__init(wo);
    tfplugin5__schema__attribute__init(pw);
    tfplugin5__schema__attribute__init(n);
    id->name = "id";
    id->type = (ProtobufCBinaryData){8, (uint8_t *)"\"string\""};
    wo->name = "value_wo";
    wo->type = (ProtobufCBinaryData){8, (uint8_t *)"\"string\""};
    wo->write_only = 1;
    pw->name = "pw";
    pw->type = (ProtobufCBinaryData){8, (uint8_t *)"\"string\""};
    pw->sensitive = 1;
    n->name = "n";
    n->type = (ProtobufCBinaryData){8, (uint8_t *)"\"number\""};
    Tfplugin5__Schema__Block *inner = tmem(sizeof *inner);
    tfplugin5__schema__block__init(inner);
    inner->n_attributes = 1;
    inner->attributes = dup_ptrs((void *[]){n}, 1);
    Tfplugin5__Schema__NestedBlock *nb = tmem(sizeof *nb);
    tfplugin5__schema__nested_block__init(nb);
    nb->type_name = "rule";
    nb->nesting = TFPLUGIN5__SCHEMA__NESTED_BLOCK__NESTING_MODE__SET;
    nb->block = inner;
    Tfplugin5__Schema__Block *blk = tmem(sizeof *blk);
    tfplugin5__schema__block__init(blk);
    blk->n_attributes = 3;
    blk->attributes = dup_ptrs((void *[]){id, wo, pw}, 3);
    blk->n_block_types = 1;
    blk->block_types = dup_ptrs((void *[]){nb}, 1);
    Tfplugin5__Schema *schema = tmem(sizeof *schema);
    tfplugin5__schema__init(schema);
    schema->block = blk;
    Tfplugin5__GetProviderSchema__Response__ResourceSchemasEntry *e = tmem(sizeof *e);
    tfplugin5__get_provider_schema__response__resource_schemas_entry__init(e);
    e->key = "five_thing";
    e->value = schema;
    Tfplugin5__GetProviderSchema__Response *r = tmem(sizeof *r);
    tfplugin5__get_provider_schema__response__init(r);
    r->n_resource_schemas = 1;
    r->resource_schemas = dup_ptrs((void *[]){e}, 1);
    size_t len;
    uint8_t *bytes = pack(&r->base, &len);

    dec_schema *s = NULL;
    dec_error err = DEC_ERROR_INIT;
    CHECK_INT_EQ(dec_schema_from_provider_schema(5, bytes, len, NULL, &s, &err), 0);
    const dec_type *t = dec_schema_lookup(s, DEC_SCHEMA_RESOURCE, "five_thing");
    CHECK_STR_EQ(type_json(t), "[\"object\",{\"id\":\"string\",\"pw\":\"string\","
                               "\"rule\":[\"set\",[\"object\",{\"n\":\"number\"}]],"
                               "\"value_wo\":\"string\"}]");
    CHECK(attr(t, "value_wo") && attr(t, "value_wo")->write_only);
    CHECK(attr(t, "pw") && attr(t, "pw")->sensitive);
    /* No provider block in the response: an empty configuration. */
    CHECK_STR_EQ(type_json(dec_schema_lookup(s, DEC_SCHEMA_PROVIDER, NULL)), "[\"object\",{}]");
    CHECK(dec_schema_lookup(s, DEC_SCHEMA_PROVIDER_META, NULL) == NULL);
    dec_schema_free(s);

    /* The same bytes read as protocol 6: field 10 is nested_type there, a
     * message, so the bool's varint is a wire-type mismatch. */
    s = NULL;
    int rc = dec_schema_from_provider_schema(6, bytes, len, NULL, &s, &err);
    CHECK_INT_EQ(rc, TFTAP_EDECODE);
    CHECK(s == NULL);
    dec_error_done(&err);
    CHECK_INT_EQ(dec_schema_from_provider_schema(7, bytes, len, NULL, &s, &err), TFTAP_EINVAL);
    dec_error_done(&err);
    tmem_free();
}

/* ---- failures -------------------------------------------------------------- */

static void expect_error(const uint8_t *p, size_t n, const dec_limits *lim, int code,
                         const char *path, const char *reason)
{
    dec_schema *s = (dec_schema *)1;
    dec_error err = DEC_ERROR_INIT;
    CHECK_INT_EQ(dec_schema_from_provider_schema(6, p, n, lim, &s, &err), code);
    CHECK(s == NULL);
    CHECK_INT_EQ(err.code, code);
    if (path)
        CHECK_STR_EQ(err.path, path);
    if (reason)
        CHECK_STR_EQ(err.reason, reason);
    dec_error_done(&err);
}

static void test_errors(void)
{
    size_t len;
    uint8_t *bytes = provider_schema6(&len);
    /* Truncated anywhere inside: a length runs past the end. */
    expect_error(bytes, len - 3, NULL, TFTAP_EDECODE, "",
                 "malformed protobuf tfplugin6.GetProviderSchema.Response: length runs past the "
                 "end of the message");
    expect_error((const uint8_t *)"\xff\xff\xff\xff", 4, NULL, TFTAP_EDECODE, "",
                 "malformed protobuf tfplugin6.GetProviderSchema.Response: truncated field tag");
    expect_error((const uint8_t *)"\x0b\x00", 2, NULL, TFTAP_EDECODE, "",
                 "malformed protobuf tfplugin6.GetProviderSchema.Response: unsupported wire type");
    /* Size limit. */
    dec_limits small = {0, 16};
    expect_error(bytes, len, &small, TFTAP_ELIMIT, "", NULL);
    tmem_free();

    /* A bad type names where it is. */
    Tfplugin6__GetProviderSchema__Response *r = tmem(sizeof *r);
    tfplugin6__get_provider_schema__response__init(r);
    r->n_resource_schemas = 1;
    r->resource_schemas = dup_ptrs(
        (void *[]){entry6("bad", s6(b6(NONE, ARR(nb6("outer", M6(LIST),
                                                     b6(ARR(a6("x", "[\"list\"", 0)), NONE))))))},
        1);
    bytes = pack(&r->base, &len);
    dec_schema *s = NULL;
    dec_error err = DEC_ERROR_INIT;
    CHECK_INT_EQ(dec_schema_from_provider_schema(6, bytes, len, NULL, &s, &err), TFTAP_EDECODE);
    CHECK_STR_EQ(err.path, ".resource_schemas[\"bad\"].outer.x");
    CHECK(err.reason && strstr(err.reason, "type") != NULL);
    dec_error_done(&err);

    /* An attribute with neither type nor nested type. */
    r->resource_schemas =
        dup_ptrs((void *[]){entry6("bad", s6(b6(ARR(a6("empty", "", 0)), NONE)))}, 1);
    bytes = pack(&r->base, &len);
    expect_error(bytes, len, NULL, TFTAP_EDECODE, ".resource_schemas[\"bad\"].empty",
                 "attribute has neither a type nor a nested type");

    /* Duplicate attribute names. */
    r->resource_schemas =
        dup_ptrs((void *[]){entry6(
                     "dup", s6(b6(ARR(a6("a", "\"string\"", 0), a6("a", "\"bool\"", 0)), NONE)))},
                 1);
    bytes = pack(&r->base, &len);
    expect_error(bytes, len, NULL, TFTAP_EDECODE, ".resource_schemas[\"dup\"]",
                 "duplicate attribute or block type name");

    /* Nesting deeper than the limit, in blocks and in messages. */
    Tfplugin6__Schema__Block *blk = b6(ARR(a6("leaf", "\"string\"", 0)), NONE);
    for (int i = 0; i < 40; i++)
        blk = b6(NONE, ARR(nb6("n", M6(SINGLE), blk)));
    r->resource_schemas = dup_ptrs((void *[]){entry6("deep", s6(blk))}, 1);
    bytes = pack(&r->base, &len);
    dec_limits shallow = {16, 0};
    expect_error(bytes, len, &shallow, TFTAP_ELIMIT, "",
                 "protobuf messages nested deeper than 40 levels");
    /* Each block level is two messages deep, so 39 levels of blocks fit the
     * message bound (2 * 39 + 8) but not the schema's own. */
    dec_limits mid = {39, 0};
    expect_error(bytes, len, &mid, TFTAP_ELIMIT, NULL, "schema nested deeper than 39 levels");
    dec_limits roomy = {64, 0};
    CHECK_INT_EQ(dec_schema_from_provider_schema(6, bytes, len, &roomy, &s, &err), 0);
    dec_schema_free(s);
    tmem_free();
}

/* ---- `tofu providers schema -json` ----------------------------------------- */

static char *read_golden(const char *name, size_t *len)
{
    const char *dir = getenv("top_srcdir");
    tftap_buf path = TFTAP_BUF_INIT, b = TFTAP_BUF_INIT;
    tftap_buf_printf(&path, "%s/tests/decoder/golden/schema/%s", dir ? dir : ".", name);
    int rc = tftap_read_file(tftap_buf_cstr(&path), (size_t)16 << 20, &b);
    tftap_buf_done(&path);
    if (rc) {
        fprintf(stderr, "cannot read golden file %s\n", name);
        tftap_buf_done(&b);
        return NULL;
    }
    return tftap_buf_take(&b, len);
}

static const struct dec_attr *elem_attr(const dec_type *t, const char *coll, const char *name)
{
    const struct dec_attr *c = attr(t, coll);
    return c && c->type->elem ? attr(c->type->elem, name) : NULL;
}

static int flag(const struct dec_attr *a)
{
    return a ? (int)a->sensitive : -1;
}

/* The listing compared with providers-schema.<name>.expected. */
static void list_schema(const dec_schema *s, const char *p, tftap_buf *got)
{
    static const struct {
        enum dec_schema_kind kind;
        const char *label, *suffix;
    } q[] = {
        {DEC_SCHEMA_PROVIDER, "provider", NULL},      {DEC_SCHEMA_RESOURCE, "resource", "thing"},
        {DEC_SCHEMA_RESOURCE, "resource", "pet"},     {DEC_SCHEMA_RESOURCE, "resource", "id"},
        {DEC_SCHEMA_RESOURCE, "resource", "trigger"}, {DEC_SCHEMA_DATA_SOURCE, "data", "echo"},
    };
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
        tftap_buf name = TFTAP_BUF_INIT;
        if (q[i].suffix)
            tftap_buf_printf(&name, "%s_%s", p, q[i].suffix);
        const char *n = q[i].suffix ? tftap_buf_cstr(&name) : NULL;
        if (n)
            tftap_buf_printf(got, "%s %s: ", q[i].label, n);
        else
            tftap_buf_printf(got, "%s: ", q[i].label);
        tftap_buf_printf(got, "%s\n", type_json(dec_schema_lookup(s, q[i].kind, n)));
        tftap_buf_done(&name);
    }
    const struct dec_function *fn = dec_schema_function(s, "reverse");
    tftap_buf_printf(got, "function reverse: %zu params, arg0 %s, ", fn ? fn->nparams : 0,
                     type_json(dec_function_arg_type(fn, 0)));
    tftap_buf_printf(got, "variadic %s, ", type_json(fn ? fn->variadic : NULL));
    tftap_buf_printf(got, "returns %s\n", type_json(fn ? fn->ret : NULL));
    tftap_buf name = TFTAP_BUF_INIT;
    tftap_buf_printf(&name, "%s_thing", p);
    const dec_type *v = dec_schema_lookup(s, DEC_SCHEMA_RESOURCE, tftap_buf_cstr(&name));
    tftap_buf_done(&name);
    tftap_buf_printf(got,
                     "sensitive: provider.token %d, secret %d, string_attr %d, "
                     "entries[].value %d, entries[].key %d\n",
                     flag(attr(dec_schema_lookup(s, DEC_SCHEMA_PROVIDER, NULL), "token")),
                     flag(attr(v, "secret")), flag(attr(v, "string_attr")),
                     flag(elem_attr(v, "entries", "value")), flag(elem_attr(v, "entries", "key")));
}

static void test_cli_json(void)
{
    size_t len = 0;
    char *json = read_golden("providers-schema.json", &len);
    CHECK(json != NULL);
    if (!json)
        return;
    dec_schema *s = NULL;
    dec_error err = DEC_ERROR_INIT;
    /* Two providers in the file: one must be named. */
    CHECK_INT_EQ(dec_schema_from_cli_json(json, len, NULL, NULL, &s, &err), TFTAP_EINVAL);
    CHECK_STR_EQ(err.reason, "the schema document holds 2 matching providers: name one");
    dec_error_done(&err);
    CHECK_INT_EQ(dec_schema_from_cli_json(json, len, "nosuch", NULL, &s, &err), TFTAP_ENOTFOUND);
    CHECK_STR_EQ(err.reason, "no provider matching \"nosuch\" in the schema");
    dec_error_done(&err);
    /* A suffix must start after a slash: "test6" does not name ".../tftest6". */
    CHECK_INT_EQ(dec_schema_from_cli_json(json, len, "test6", NULL, &s, &err), TFTAP_ENOTFOUND);
    dec_error_done(&err);

    static const struct {
        const char *addr, *type, *expected;
    } cases[] = {
        {"registry.opentofu.org/tftap/tftest6", "tftest6", "providers-schema.tftest6.expected"},
        {"tftap/tftest6", "tftest6", "providers-schema.tftest6.expected"},
        {"tftest6", "tftest6", "providers-schema.tftest6.expected"},
        {"tftap/tftest5", "tftest5", "providers-schema.tftest5.expected"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t elen = 0;
        char *expected = read_golden(cases[c].expected, &elen);
        CHECK(expected != NULL);
        s = NULL;
        CHECK_INT_EQ(dec_schema_from_cli_json(json, len, cases[c].addr, NULL, &s, &err), 0);
        if (err.code)
            fprintf(stderr, "  error: %s: %s\n", err.path, err.reason);
        dec_error_done(&err);
        tftap_buf got = TFTAP_BUF_INIT;
        list_schema(s, cases[c].type, &got);
        CHECK_STR_EQ(tftap_buf_cstr(&got), expected ? expected : "");
        tftap_buf_done(&got);
        dec_schema_free(s);
        free(expected);
    }
    free(json);

    /* What the tftest providers do not use: every nesting mode in JSON form,
     * write-only attributes, ephemeral resources, identities, variadics. */
    const char *doc =
        "{\"provider_schemas\":{\"example.com/x/y\":{"
        "\"resource_schemas\":{\"r\":{\"block\":{\"attributes\":{"
        "\"pw\":{\"type\":\"string\",\"write_only\":true},"
        "\"m\":{\"nested_type\":{\"nesting_mode\":\"map\",\"attributes\":{"
        "\"s\":{\"type\":\"string\",\"sensitive\":true}}}},"
        "\"st\":{\"nested_type\":{\"nesting_mode\":\"set\",\"attributes\":{"
        "\"n\":{\"type\":\"number\"}}}}},"
        "\"block_types\":{\"g\":{\"nesting_mode\":\"group\",\"block\":{\"attributes\":{"
        "\"b\":{\"type\":\"bool\"}}}},"
        "\"dl\":{\"nesting_mode\":\"list\",\"block\":{\"attributes\":{\"d\":{\"type\":\"dynamic\"}}"
        "}},"
        "\"mb\":{\"nesting_mode\":\"map\",\"block\":{}},"
        "\"sb\":{\"nesting_mode\":\"set\",\"block\":{\"block_types\":{\"in\":{"
        "\"nesting_mode\":\"single\",\"block\":{\"attributes\":{\"z\":{\"type\":\"string\"}}}}}}},"
        "\"bad\":{\"nesting_mode\":\"invalid\",\"block\":{}}}}}},"
        "\"ephemeral_resource_schemas\":{\"e\":{\"block\":{\"attributes\":{"
        "\"tok\":{\"type\":\"string\",\"sensitive\":true}}}}},"
        "\"functions\":{\"f\":{\"return_type\":[\"object\",{\"a\":\"string\"}],"
        "\"variadic_parameter\":{\"name\":\"v\",\"type\":[\"list\",\"number\"]}}},"
        "\"resource_identity_schemas\":{\"r\":{\"version\":0,\"attributes\":{"
        "\"id\":{\"type\":\"string\",\"required_for_import\":true}}}}}}}";
    CHECK_INT_EQ(dec_schema_from_cli_json(doc, strlen(doc), NULL, NULL, &s, &err), 0);
    dec_error_done(&err);
    const dec_type *r = dec_schema_lookup(s, DEC_SCHEMA_RESOURCE, "r");
    CHECK_STR_EQ(
        type_json(r),
        "[\"object\",{\"dl\":\"dynamic\",\"g\":[\"object\",{\"b\":\"bool\"}],"
        "\"m\":[\"map\",[\"object\",{\"s\":\"string\"}]],\"mb\":[\"map\",[\"object\",{}]],"
        "\"pw\":\"string\",\"sb\":[\"set\",[\"object\",{\"in\":[\"object\",{\"z\":\"string\"}]}]],"
        "\"st\":[\"set\",[\"object\",{\"n\":\"number\"}]]}]");
    CHECK(attr(r, "pw") && attr(r, "pw")->write_only);
    CHECK_INT_EQ(flag(elem_attr(r, "m", "s")), 1);
    CHECK_STR_EQ(type_json(dec_schema_lookup(s, DEC_SCHEMA_PROVIDER, NULL)), "[\"object\",{}]");
    CHECK_INT_EQ(flag(attr(dec_schema_lookup(s, DEC_SCHEMA_EPHEMERAL, "e"), "tok")), 1);
    CHECK_STR_EQ(type_json(dec_schema_lookup(s, DEC_SCHEMA_IDENTITY, "r")),
                 "[\"object\",{\"id\":\"string\"}]");
    const struct dec_function *f = dec_schema_function(s, "f");
    CHECK(f && f->nparams == 0);
    CHECK_STR_EQ(type_json(dec_function_arg_type(f, 3)), "[\"list\",\"number\"]");
    CHECK_STR_EQ(type_json(f ? f->ret : NULL), "[\"object\",{\"a\":\"string\"}]");
    dec_schema_free(s);

    /* Not the right document at all. */
    CHECK_INT_EQ(dec_schema_from_cli_json("{\"x\":1}", 7, NULL, NULL, &s, &err), TFTAP_EDECODE);
    dec_error_done(&err);
    CHECK_INT_EQ(dec_schema_from_cli_json("{\"provider_schemas\":", 20, NULL, NULL, &s, &err),
                 TFTAP_EDECODE);
    dec_error_done(&err);
    CHECK_INT_EQ(dec_schema_from_cli_json("{\"provider_schemas\":{}}", 23, NULL, NULL, &s, &err),
                 TFTAP_ENOTFOUND);
    dec_error_done(&err);
    /* A bad attribute type names its place. */
    const char *bad = "{\"provider_schemas\":{\"p/q\":{\"resource_schemas\":{\"r\":{\"block\":"
                      "{\"attributes\":{\"a\":{\"type\":[\"lisst\",\"string\"]}}}}}}}}";
    CHECK_INT_EQ(dec_schema_from_cli_json(bad, strlen(bad), NULL, NULL, &s, &err), TFTAP_EDECODE);
    CHECK_STR_EQ(err.path, ".resource_schemas[\"r\"].a");
    dec_error_done(&err);
}

int main(void)
{
    test_v6_schema();
    test_v5_schema();
    test_errors();
    test_cli_json();
    return check_report("test_schema");
}
