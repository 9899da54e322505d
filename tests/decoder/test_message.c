/* Message rendering tests: real requests and responses packed with
 * protobuf-c's generated code, DynamicValues packed with msgpack-c, rendered
 * by dec_message_to_json and compared with the exact JSON expected. */
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "decoder/decoder.h"
#include "plugin/grpc_stdio.pb-c.h"
#include "tests/check.h"
#include "tfplugin5.pb-c.h"
#include "tfplugin6.pb-c.h"

/* ---- helpers ------------------------------------------------------------------ */

static void *allocs[1024];
static size_t nallocs;

static void *keep(void *p)
{
    if (!p || nallocs == sizeof allocs / sizeof allocs[0])
        abort();
    allocs[nallocs++] = p;
    return p;
}

static void keep_free(void)
{
    while (nallocs)
        free(allocs[--nallocs]);
}

/* msgpack building: start, add items with the msgpack-c packer, finish into
 * a DynamicValue. */
static msgpack_sbuffer sb;
static msgpack_packer pk;

static void mp_begin(void)
{
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
}

static void mp_str(const char *s)
{
    msgpack_pack_str(&pk, strlen(s));
    msgpack_pack_str_body(&pk, s, strlen(s));
}

static void mp_unknown(void)
{
    msgpack_pack_ext(&pk, 1, 0);
    msgpack_pack_ext_body(&pk, "\0", 1);
}

static ProtobufCBinaryData mp_end(void)
{
    ProtobufCBinaryData b = {sb.size, keep(msgpack_sbuffer_release(&sb))};
    msgpack_sbuffer_destroy(&sb);
    return b;
}

static Tfplugin6__DynamicValue *dv6(ProtobufCBinaryData mp)
{
    Tfplugin6__DynamicValue *v = keep(calloc(1, sizeof *v));
    tfplugin6__dynamic_value__init(v);
    v->msgpack = mp;
    return v;
}

static Tfplugin6__DynamicValue *dv6_json(const char *json)
{
    Tfplugin6__DynamicValue *v = keep(calloc(1, sizeof *v));
    tfplugin6__dynamic_value__init(v);
    v->json = (ProtobufCBinaryData){strlen(json), (uint8_t *)json};
    return v;
}

static uint8_t *pack(const ProtobufCMessage *m, size_t *len)
{
    *len = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = keep(malloc(*len + 64));
    protobuf_c_message_pack(m, buf);
    return buf;
}

/* The schema every test decodes with, from `providers schema -json` form. */
static const char schema_json[] =
    "{\"format_version\":\"1.0\",\"provider_schemas\":{\"registry.opentofu.org/t/test\":{"
    "\"provider\":{\"version\":0,\"block\":{\"attributes\":{"
    "\"region\":{\"type\":\"string\",\"optional\":true},"
    "\"token\":{\"type\":\"string\",\"optional\":true,\"sensitive\":true}}}},"
    "\"resource_schemas\":{\"test_thing\":{\"version\":0,\"block\":{\"attributes\":{"
    "\"id\":{\"type\":\"string\",\"computed\":true},"
    "\"password\":{\"type\":\"string\",\"optional\":true,\"sensitive\":true},"
    "\"tags\":{\"type\":[\"map\",\"string\"],\"optional\":true}},"
    "\"block_types\":{\"rule\":{\"nesting_mode\":\"list\",\"block\":{\"attributes\":{"
    "\"port\":{\"type\":\"number\",\"required\":true}}}}}}},"
    "\"test_other\":{\"version\":0,\"block\":{\"attributes\":{"
    "\"n\":{\"type\":\"number\",\"optional\":true}}}}},"
    "\"data_source_schemas\":{\"test_ds\":{\"version\":0,\"block\":{\"attributes\":{"
    "\"q\":{\"type\":\"string\",\"required\":true}}}}},"
    "\"ephemeral_resource_schemas\":{\"test_eph\":{\"version\":0,\"block\":{\"attributes\":{"
    "\"secret\":{\"type\":\"string\",\"computed\":true,\"sensitive\":true}}}}},"
    "\"state_store_schemas\":{\"test_store\":{\"version\":0,\"block\":{\"attributes\":{"
    "\"bucket\":{\"type\":\"string\",\"required\":true},"
    "\"key\":{\"type\":\"string\",\"optional\":true,\"sensitive\":true}}}}},"
    "\"functions\":{\"echo\":{\"description\":\"\",\"summary\":\"\","
    "\"return_type\":[\"list\",\"string\"],"
    "\"parameters\":[{\"name\":\"s\",\"description\":\"\",\"type\":\"string\"}],"
    "\"variadic_parameter\":{\"name\":\"rest\",\"description\":\"\",\"type\":\"number\"}}},"
    "\"resource_identity_schemas\":{\"test_thing\":{\"version\":0,\"attributes\":{"
    "\"id\":{\"type\":\"string\",\"required_for_import\":true}}}}}}}";

static dec_schema *schema;

/* With TFTAP_SEED_DIR set, every message rendered here is also written as a
 * seed for tests/fuzz/fuzz_message (selector line, direction, bytes). */
static void write_seed(const char *method, int is_response, const uint8_t *p, size_t n)
{
    static int counter;
    const char *dir = getenv("TFTAP_SEED_DIR");
    if (!dir)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/message-%03d", dir, counter++);
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    fprintf(f, "%s\n%c", method, is_response ? 's' : 'q');
    fwrite(p, 1, n, f);
    fclose(f);
}

static char *render(const char *method, int is_response, const uint8_t *p, size_t n,
                    const char *type_name, const dec_opts *opts, int *rc)
{
    write_seed(method, is_response, p, n);
    static tftap_buf out;
    dec_error err = DEC_ERROR_INIT;
    tftap_buf_reset(&out);
    tftap_buf_puts(&out, "<"); /* output is appended, never overwritten */
    *rc = dec_message_to_json(method, is_response, p, n, schema, type_name, opts, &out, &err);
    if (*rc) {
        CHECK_STR_EQ(tftap_buf_cstr(&out), "<"); /* restored on failure */
        tftap_buf_reset(&out);
        tftap_buf_printf(&out, "error %d: %s", *rc, err.reason ? err.reason : "?");
    }
    dec_error_done(&err);
    const char *s = tftap_buf_cstr(&out);
    return (char *)(*rc ? s : s + 1);
}

/* SHA-256 of "{}". */
#define SHA256_BRACES "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"

/* A stand-in for the store's keyed HMAC: deterministic and visibly fake. */
static void fake_redact(void *ctx, const char *json, size_t len, char out[65])
{
    (void)ctx;
    char hex[65];
    tftap_sha256_hex(json, len, hex);
    memcpy(out, hex, 65);
}

#define SHA256_EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SHA256_XYZ "3608bca1e44ea6c4d268eb6db02260269892c0b42b86bbf1e77a6fa16c3c9282"

/* ---- PlanResourceChange ------------------------------------------------------ */

static int redactions;

static void counting_redact(void *ctx, const char *json, size_t len, char out[65])
{
    redactions++;
    fake_redact(ctx, json, len, out);
}

static uint8_t *plan_request(size_t *len)
{
    Tfplugin6__PlanResourceChange__Request *r = keep(calloc(1, sizeof *r));
    tfplugin6__plan_resource_change__request__init(r);
    r->type_name = "test_thing";
    mp_begin(); /* attributes in sorted order, as go-cty writes them */
    msgpack_pack_map(&pk, 4);
    mp_str("id");
    mp_unknown();
    mp_str("password");
    mp_str("hunter2");
    mp_str("rule");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_map(&pk, 1);
    mp_str("port");
    msgpack_pack_int64(&pk, 80);
    mp_str("tags");
    msgpack_pack_map(&pk, 1);
    mp_str("env");
    mp_str("prod");
    r->proposed_new_state = dv6(mp_end());
    r->config = dv6_json("{\"id\":null,\"password\":\"hunter2\",\"rule\":[{\"port\":80}],"
                         "\"tags\":{\"env\":\"prod\"}}");
    r->prior_private = (ProtobufCBinaryData){3, (uint8_t *)"xyz"};
    mp_begin();
    msgpack_pack_nil(&pk);
    r->provider_meta = dv6(mp_end()); /* no provider_meta schema: undecoded */
    Tfplugin6__ClientCapabilities *cc = keep(calloc(1, sizeof *cc));
    tfplugin6__client_capabilities__init(cc);
    cc->deferral_allowed = 1;
    r->client_capabilities = cc;
    Tfplugin6__ResourceIdentityData *id = keep(calloc(1, sizeof *id));
    tfplugin6__resource_identity_data__init(id);
    mp_begin();
    msgpack_pack_map(&pk, 1);
    mp_str("id");
    mp_str("i-1");
    id->identity_data = dv6(mp_end());
    r->prior_identity = id;
    return pack(&r->base, len);
}

#define PLAN_REQUEST_JSON(pw)                                                                      \
    "{\"type_name\":\"test_thing\",\"prior_state\":null,"                                          \
    "\"proposed_new_state\":{\"id\":{\"$unknown\":{}},\"password\":" pw ","                        \
    "\"rule\":[{\"port\":80}],\"tags\":{\"env\":\"prod\"}},"                                       \
    "\"config\":{\"id\":null,\"password\":" pw ",\"rule\":[{\"port\":80}],"                        \
    "\"tags\":{\"env\":\"prod\"}},"                                                                \
    "\"prior_private\":{\"size\":3,\"sha256\":\"" SHA256_XYZ "\"},"                                \
    "\"provider_meta\":{\"$undecoded\":{\"size\":1,\"sha256\":"                                    \
    "\"e4ff5e7d7a7f08e9800a3e25cb774533cb20040df30b6ba10f956f9acd0eb3f7\"}},"                      \
    "\"client_capabilities\":{\"deferral_allowed\":true,\"write_only_attributes_allowed\":false}," \
    "\"prior_identity\":{\"identity_data\":{\"id\":\"i-1\"}}}"

static void test_plan(void)
{
    size_t len;
    int rc;
    uint8_t *req = plan_request(&len);
    const char *m = "/tfplugin6.Provider/PlanResourceChange";
    CHECK_STR_EQ(render(m, 0, req, len, NULL, NULL, &rc), PLAN_REQUEST_JSON("\"hunter2\""));
    /* With redaction, the sensitive attribute is replaced by its keyed hash:
     * equal secrets hash equal, in state and config alike. */
    dec_opts opts = {{0, 0}, fake_redact, NULL, NULL};
    CHECK_STR_EQ(
        render(m, 0, req, len, NULL, &opts, &rc),
        PLAN_REQUEST_JSON("{\"$sensitive\":\"hmac-sha256:"
                          "4ddbb67bf993867e13253c146a339ed3b33ea5b895543569278e99d5b3c2b7d5"
                          "\"}"));
    /* The request's own type name wins over the caller's. */
    CHECK_STR_EQ(render(m, 0, req, len, "test_other", NULL, &rc), PLAN_REQUEST_JSON("\"hunter2\""));

    char *tn = NULL;
    CHECK_INT_EQ(dec_request_type_name(m, req, len, &tn), 0);
    CHECK_STR_EQ(tn, "test_thing");
    free(tn);

    /* The response: the schema comes from the request's type name. */
    Tfplugin6__PlanResourceChange__Response *r = keep(calloc(1, sizeof *r));
    tfplugin6__plan_resource_change__response__init(r);
    mp_begin();
    msgpack_pack_map(&pk, 4);
    mp_str("id");
    mp_str("abc");
    mp_str("password");
    msgpack_pack_nil(&pk);
    mp_str("rule");
    msgpack_pack_array(&pk, 0);
    mp_str("tags");
    msgpack_pack_nil(&pk);
    r->planned_state = dv6(mp_end());
    Tfplugin6__AttributePath__Step s1 = TFPLUGIN6__ATTRIBUTE_PATH__STEP__INIT,
                                   s2 = TFPLUGIN6__ATTRIBUTE_PATH__STEP__INIT,
                                   s3 = TFPLUGIN6__ATTRIBUTE_PATH__STEP__INIT,
                                   s4 = TFPLUGIN6__ATTRIBUTE_PATH__STEP__INIT;
    s1.selector_case = TFPLUGIN6__ATTRIBUTE_PATH__STEP__SELECTOR_ATTRIBUTE_NAME;
    s1.attribute_name = "tags";
    s2.selector_case = TFPLUGIN6__ATTRIBUTE_PATH__STEP__SELECTOR_ELEMENT_KEY_STRING;
    s2.element_key_string = "a \"b\"";
    s3.selector_case = TFPLUGIN6__ATTRIBUTE_PATH__STEP__SELECTOR_ELEMENT_KEY_INT;
    s3.element_key_int = 2;
    s4.selector_case = TFPLUGIN6__ATTRIBUTE_PATH__STEP__SELECTOR_ATTRIBUTE_NAME;
    s4.attribute_name = "9 lives";
    Tfplugin6__AttributePath__Step *steps[] = {&s1, &s2, &s3, &s4};
    Tfplugin6__AttributePath path = TFPLUGIN6__ATTRIBUTE_PATH__INIT;
    path.n_steps = 4;
    path.steps = steps;
    Tfplugin6__AttributePath *paths[] = {&path};
    r->n_requires_replace = 1;
    r->requires_replace = paths;
    Tfplugin6__Diagnostic d = TFPLUGIN6__DIAGNOSTIC__INIT;
    d.severity = TFPLUGIN6__DIAGNOSTIC__SEVERITY__WARNING;
    d.summary = "careful";
    d.detail = "line\nbreak";
    Tfplugin6__Diagnostic *diags[] = {&d};
    r->n_diagnostics = 1;
    r->diagnostics = diags;
    uint8_t *resp = pack(&r->base, &len);
    CHECK_STR_EQ(
        render(m, 1, resp, len, "test_thing", NULL, &rc),
        "{\"planned_state\":{\"id\":\"abc\",\"password\":null,\"rule\":[],\"tags\":null},"
        "\"requires_replace\":[{\"path\":\".tags[\\\"a \\\\\\\"b\\\\\\\"\\\"][2][\\\"9 "
        "lives\\\"]\","
        "\"steps\":[{\"attribute_name\":\"tags\"},{\"element_key_string\":\"a \\\"b\\\"\"},"
        "{\"element_key_int\":2},{\"attribute_name\":\"9 lives\"}]}],"
        "\"planned_private\":{\"size\":0,\"sha256\":\"" SHA256_EMPTY "\"},"
        "\"diagnostics\":[{\"severity\":\"WARNING\",\"summary\":\"careful\","
        "\"detail\":\"line\\nbreak\",\"attribute\":null}],"
        "\"legacy_type_system\":false,\"deferred\":null,\"planned_identity\":null}");
    /* Without a type name the response's values cannot be decoded. */
    CHECK_STR_EQ(
        render(m, 1, resp, len, NULL, NULL, &rc),
        "{\"planned_state\":{\"$undecoded\":{\"size\":30,\"sha256\":"
        "\"444aefd14fa13ea789cdbf7b1b2e13263b29df012cb54d43cfc8ccd6cf06530a\"}},"
        "\"requires_replace\":[{\"path\":\".tags[\\\"a \\\\\\\"b\\\\\\\"\\\"][2][\\\"9 "
        "lives\\\"]\","
        "\"steps\":[{\"attribute_name\":\"tags\"},{\"element_key_string\":\"a \\\"b\\\"\"},"
        "{\"element_key_int\":2},{\"attribute_name\":\"9 lives\"}]}],"
        "\"planned_private\":{\"size\":0,\"sha256\":\"" SHA256_EMPTY "\"},"
        "\"diagnostics\":[{\"severity\":\"WARNING\",\"summary\":\"careful\","
        "\"detail\":\"line\\nbreak\",\"attribute\":null}],"
        "\"legacy_type_system\":false,\"deferred\":null,\"planned_identity\":null}");
    keep_free();
}

/* A value that does not match its schema is reported in place. */
static void test_bad_value(void)
{
    Tfplugin6__ReadDataSource__Request *r = keep(calloc(1, sizeof *r));
    tfplugin6__read_data_source__request__init(r);
    r->type_name = "test_ds";
    mp_begin();
    msgpack_pack_map(&pk, 1);
    mp_str("q");
    msgpack_pack_int64(&pk, 5); /* a number where a string belongs */
    r->config = dv6(mp_end());
    size_t len;
    int rc;
    uint8_t *p = pack(&r->base, &len);
    char *got = render("/tfplugin6.Provider/ReadDataSource", 0, p, len, NULL, NULL, &rc);
    CHECK_INT_EQ(rc, 0);
    CHECK_STR_EQ(got, "{\"type_name\":\"test_ds\",\"config\":{\"$error\":"
                      "\"decode error at .q: string is required\",\"size\":4},"
                      "\"provider_meta\":null,\"client_capabilities\":null}");
    keep_free();
}

/* ---- unknown fields, truncation, garbage ------------------------------------- */

static void test_unknown_fields(void)
{
    Tfplugin6__ReadDataSource__Request *r = keep(calloc(1, sizeof *r));
    tfplugin6__read_data_source__request__init(r);
    r->type_name = "test_ds";
    mp_begin();
    msgpack_pack_map(&pk, 1);
    mp_str("q");
    mp_str("x");
    r->config = dv6(mp_end());
    size_t len;
    int rc;
    uint8_t *p = pack(&r->base, &len);
    /* A newer protocol's fields: 99 as a varint, 100 with three bytes. */
    memcpy(p + len,
           "\x98\x06\x01\xa2\x06\x03"
           "abc",
           9);
    len += 9;
    CHECK_STR_EQ(render("/tfplugin6.Provider/ReadDataSource", 0, p, len, NULL, NULL, &rc),
                 "{\"type_name\":\"test_ds\",\"config\":{\"q\":\"x\"},\"provider_meta\":null,"
                 "\"client_capabilities\":null,\"$unknown_fields\":["
                 "{\"field\":99,\"wire_type\":0,\"size\":1},"
                 "{\"field\":100,\"wire_type\":2,\"size\":4}]}");
    /* Truncated: the config's length now runs past the end. */
    CHECK_STR_EQ(render("/tfplugin6.Provider/ReadDataSource", 0, p, 12, NULL, NULL, &rc),
                 "error -3: malformed protobuf tfplugin6.ReadDataSource.Request: length runs past "
                 "the end of the message");
    CHECK_STR_EQ(render("/tfplugin6.Provider/ReadDataSource", 0, (const uint8_t *)"\x0a", 1, NULL,
                        NULL, &rc),
                 "error -3: malformed protobuf tfplugin6.ReadDataSource.Request: truncated length");
    /* Well-formed wire data of the wrong shape: field 1 must be a string. */
    CHECK_STR_EQ(render("/tfplugin6.Provider/ReadDataSource", 0, (const uint8_t *)"\x08\x01", 2,
                        NULL, NULL, &rc),
                 "error -3: invalid protobuf tfplugin6.ReadDataSource.Request");
    /* Garbage inside a nested message is caught before protobuf-c sees it. */
    CHECK_STR_EQ(render("/tfplugin6.Provider/ReadDataSource", 0,
                        (const uint8_t *)"\x12\x02\xff\xff", 4, NULL, NULL, &rc),
                 "error -3: malformed protobuf tfplugin6.DynamicValue: truncated field tag");
    /* An empty message is a message with every field at its default. */
    CHECK_STR_EQ(
        render("/tfplugin6.Provider/ReadDataSource", 0, (const uint8_t *)"", 0, NULL, NULL, &rc),
        "{\"type_name\":\"\",\"config\":null,\"provider_meta\":null,"
        "\"client_capabilities\":null}");
    /* Size limit. */
    dec_opts small = {{0, 8}, NULL, NULL, NULL};
    CHECK_STR_EQ(render("/tfplugin6.Provider/ReadDataSource", 0, p, len, NULL, &small, &rc),
                 "error -4: message of 27 bytes exceeds the limit of 8");
    keep_free();
}

static void test_methods(void)
{
    int rc;
    CHECK_INT_EQ(dec_method_protocol("/tfplugin5.Provider/GetSchema"), 5);
    CHECK_INT_EQ(dec_method_protocol("/tfplugin6.Provider/GetProviderSchema"), 6);
    CHECK_INT_EQ(dec_method_protocol("/plugin.GRPCStdio/StreamStdio"), 0);
    CHECK_INT_EQ(dec_method_protocol(NULL), 0);
    CHECK_STR_EQ(render("/grpc.health.v1.Health/Check", 0, (const uint8_t *)"", 0, NULL, NULL, &rc),
                 "error -6: unknown method /grpc.health.v1.Health/Check");
    CHECK_STR_EQ(
        render("/tfplugin6.Provider/NoSuchMethod", 0, (const uint8_t *)"", 0, NULL, NULL, &rc),
        "error -6: unknown method /tfplugin6.Provider/NoSuchMethod");
    CHECK_STR_EQ(
        render("tfplugin6.Provider/ReadResource", 0, (const uint8_t *)"", 0, NULL, NULL, &rc),
        "error -6: unknown method tfplugin6.Provider/ReadResource");
    char *tn = (char *)1;
    CHECK_INT_EQ(dec_request_type_name("/x.Y/Z", "", 0, &tn), TFTAP_ENOTFOUND);
    CHECK(tn == NULL);
    CHECK_INT_EQ(dec_request_type_name("/plugin.GRPCController/Shutdown", "", 0, &tn), 0);
    CHECK(tn == NULL);
    CHECK_INT_EQ(dec_request_type_name("/tfplugin6.Provider/ReadResource", "\x0a\x05", 2, &tn),
                 TFTAP_EDECODE);
    CHECK_INT_EQ(dec_request_type_name("/tfplugin6.Provider/ReadResource", "", 0, &tn), 0);
    CHECK(tn == NULL);
    /* The last occurrence wins, as protobuf says. */
    CHECK_INT_EQ(dec_request_type_name("/tfplugin5.Provider/ReadResource",
                                       "\x0a\x01"
                                       "a\x0a\x02"
                                       "bc",
                                       7, &tn),
                 0);
    CHECK_STR_EQ(tn, "bc");
    free(tn);
    /* MoveResourceState decodes with its destination type. */
    CHECK_INT_EQ(dec_request_type_name("/tfplugin6.Provider/MoveResourceState",
                                       "\x12\x03old\x2a\x03new", 10, &tn),
                 0);
    CHECK_STR_EQ(tn, "new");
    free(tn);
    /* CallFunction: the function name; actions: action_type. */
    CHECK_INT_EQ(dec_request_type_name("/tfplugin6.Provider/CallFunction",
                                       "\x0a\x04"
                                       "echo",
                                       6, &tn),
                 0);
    CHECK_STR_EQ(tn, "echo");
    free(tn);
    CHECK_INT_EQ(dec_request_type_name("/tfplugin6.Provider/InvokeAction",
                                       "\x0a\x03"
                                       "act",
                                       5, &tn),
                 0);
    CHECK_STR_EQ(tn, "act");
    free(tn);
    /* Not UTF-8: no usable name. */
    CHECK_INT_EQ(dec_request_type_name("/tfplugin6.Provider/ReadResource", "\x0a\x01\xff", 3, &tn),
                 0);
    CHECK(tn == NULL);
}

/* ---- functions, raw state, imports, moves, ephemeral, stdio, v5 ------------- */

static void test_call_function(void)
{
    Tfplugin6__DynamicValue *args[3];
    mp_begin();
    mp_str("abc");
    args[0] = dv6(mp_end());
    mp_begin();
    msgpack_pack_int64(&pk, 1);
    args[1] = dv6(mp_end());
    mp_begin();
    msgpack_pack_double(&pk, 2.5);
    args[2] = dv6(mp_end());
    Tfplugin6__CallFunction__Request req = TFPLUGIN6__CALL_FUNCTION__REQUEST__INIT;
    req.name = "echo";
    req.n_arguments = 3;
    req.arguments = args;
    size_t len;
    int rc;
    uint8_t *p = pack(&req.base, &len);
    const char *m = "/tfplugin6.Provider/CallFunction";
    CHECK_STR_EQ(render(m, 0, p, len, NULL, NULL, &rc),
                 "{\"name\":\"echo\",\"arguments\":[\"abc\",1,2.5]}");
    req.name = "nope";
    p = pack(&req.base, &len);
    CHECK_STR_EQ(render(m, 0, p, len, NULL, NULL, &rc),
                 "{\"name\":\"nope\",\"arguments\":[{\"$undecoded\":{\"size\":4,\"sha256\":"
                 "\"0c4a44e90bc687970dbc25eb6304a2c1f375ee76c2d09e448d3b4611302aa593\"}},"
                 "{\"$undecoded\":{\"size\":1,\"sha256\":"
                 "\"4bf5122f344554c53bde2ebb8cd2b7e3d1600ad631c385a5d7cce23c7785459a\"}},"
                 "{\"$undecoded\":{\"size\":9,\"sha256\":"
                 "\"d220cb801fa6814b6f521e55568040aecc9a57e378ebc949f665944cf8aa9d55\"}}]}");

    Tfplugin6__CallFunction__Response resp = TFPLUGIN6__CALL_FUNCTION__RESPONSE__INIT;
    mp_begin();
    msgpack_pack_array(&pk, 2);
    mp_str("x");
    mp_str("y");
    resp.result = dv6(mp_end());
    Tfplugin6__FunctionError fe = TFPLUGIN6__FUNCTION_ERROR__INIT;
    fe.text = "bad argument";
    fe._function_argument_case = TFPLUGIN6__FUNCTION_ERROR___FUNCTION_ARGUMENT_FUNCTION_ARGUMENT;
    fe.function_argument = 1;
    resp.error = &fe;
    p = pack(&resp.base, &len);
    CHECK_STR_EQ(render(m, 1, p, len, "echo", NULL, &rc),
                 "{\"result\":[\"x\",\"y\"],\"error\":{\"text\":\"bad argument\","
                 "\"function_argument\":1}}");
    /* An absent optional stays absent. */
    fe._function_argument_case = TFPLUGIN6__FUNCTION_ERROR___FUNCTION_ARGUMENT__NOT_SET;
    p = pack(&resp.base, &len);
    CHECK_STR_EQ(render(m, 1, p, len, "echo", NULL, &rc),
                 "{\"result\":[\"x\",\"y\"],\"error\":{\"text\":\"bad argument\"}}");
    keep_free();
}

static void test_upgrade_import_move(void)
{
    size_t len;
    int rc;
    /* Stored state JSON is shown as the JSON value it is, digits intact. */
    Tfplugin6__RawState raw = TFPLUGIN6__RAW_STATE__INIT;
    const char *state = "{ \"id\": \"x\", \"n\": 12345678901234567890.5e3, \"l\": [true, null] }";
    raw.json = (ProtobufCBinaryData){strlen(state), (uint8_t *)state};
    Tfplugin6__RawState__FlatmapEntry fm = TFPLUGIN6__RAW_STATE__FLATMAP_ENTRY__INIT;
    fm.key = "tags.%";
    fm.value = "0";
    Tfplugin6__RawState__FlatmapEntry *fms[] = {&fm};
    raw.n_flatmap = 1;
    raw.flatmap = fms;
    Tfplugin6__UpgradeResourceState__Request up = TFPLUGIN6__UPGRADE_RESOURCE_STATE__REQUEST__INIT;
    up.type_name = "test_thing";
    up.version = -1;
    up.raw_state = &raw;
    uint8_t *p = pack(&up.base, &len);
    const char *m = "/tfplugin6.Provider/UpgradeResourceState";
    CHECK_STR_EQ(render(m, 0, p, len, NULL, NULL, &rc),
                 "{\"type_name\":\"test_thing\",\"version\":-1,\"raw_state\":{\"json\":"
                 "{\"id\":\"x\",\"n\":12345678901234567890.5e3,\"l\":[true,null]},"
                 "\"flatmap\":{\"tags.%\":\"0\"}}}");
    /* JSON that does not parse is kept as text. */
    raw.json = (ProtobufCBinaryData){8, (uint8_t *)"{\"id\":\x01}"};
    p = pack(&up.base, &len);
    CHECK_STR_EQ(render(m, 0, p, len, NULL, NULL, &rc),
                 "{\"type_name\":\"test_thing\",\"version\":-1,\"raw_state\":{\"json\":"
                 "\"{\\\"id\\\":\\u0001}\",\"flatmap\":{\"tags.%\":\"0\"}}}");

    /* Imported resources name their own type. */
    Tfplugin6__ImportResourceState__ImportedResource a =
        TFPLUGIN6__IMPORT_RESOURCE_STATE__IMPORTED_RESOURCE__INIT;
    Tfplugin6__ImportResourceState__ImportedResource b =
        TFPLUGIN6__IMPORT_RESOURCE_STATE__IMPORTED_RESOURCE__INIT;
    a.type_name = "test_other";
    mp_begin();
    msgpack_pack_map(&pk, 1);
    mp_str("n");
    msgpack_pack_int64(&pk, 7);
    a.state = dv6(mp_end());
    b.type_name = "test_thing";
    Tfplugin6__ResourceIdentityData idd = TFPLUGIN6__RESOURCE_IDENTITY_DATA__INIT;
    mp_begin();
    msgpack_pack_map(&pk, 1);
    mp_str("id");
    mp_str("i-9");
    idd.identity_data = dv6(mp_end());
    b.identity = &idd;
    Tfplugin6__ImportResourceState__ImportedResource *ir[] = {&a, &b};
    Tfplugin6__ImportResourceState__Response imp = TFPLUGIN6__IMPORT_RESOURCE_STATE__RESPONSE__INIT;
    imp.n_imported_resources = 2;
    imp.imported_resources = ir;
    p = pack(&imp.base, &len);
    CHECK_STR_EQ(
        render("/tfplugin6.Provider/ImportResourceState", 1, p, len, "test_thing", NULL, &rc),
        "{\"imported_resources\":[{\"type_name\":\"test_other\",\"state\":{\"n\":7},"
        "\"private\":{\"size\":0,\"sha256\":\"" SHA256_EMPTY "\"},\"identity\":null},"
        "{\"type_name\":\"test_thing\",\"state\":null,"
        "\"private\":{\"size\":0,\"sha256\":\"" SHA256_EMPTY "\"},"
        "\"identity\":{\"identity_data\":{\"id\":\"i-9\"}}}],"
        "\"diagnostics\":[],\"deferred\":null}");

    /* MoveResourceState: the caller passes the target type (as
     * dec_request_type_name reports it). */
    Tfplugin6__MoveResourceState__Response mv = TFPLUGIN6__MOVE_RESOURCE_STATE__RESPONSE__INIT;
    mp_begin();
    msgpack_pack_map(&pk, 1);
    mp_str("n");
    msgpack_pack_int64(&pk, -3);
    mv.target_state = dv6(mp_end());
    mv.target_private = (ProtobufCBinaryData){3, (uint8_t *)"xyz"};
    p = pack(&mv.base, &len);
    CHECK_STR_EQ(
        render("/tfplugin6.Provider/MoveResourceState", 1, p, len, "test_other", NULL, &rc),
        "{\"target_state\":{\"n\":-3},\"diagnostics\":[],"
        "\"target_private\":{\"size\":3,\"sha256\":\"" SHA256_XYZ "\"},"
        "\"target_identity\":null}");
    keep_free();
}

static void test_ephemeral_and_stdio(void)
{
    size_t len;
    int rc;
    Tfplugin6__OpenEphemeralResource__Response r;
    tfplugin6__open_ephemeral_resource__response__init(&r);
    Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
    ts.seconds = 1700000000;
    ts.nanos = 5;
    r._renew_at_case = TFPLUGIN6__OPEN_EPHEMERAL_RESOURCE__RESPONSE___RENEW_AT_RENEW_AT;
    r.renew_at = &ts;
    mp_begin();
    msgpack_pack_map(&pk, 1);
    mp_str("secret");
    mp_str("s3cr3t");
    r.result = dv6(mp_end());
    r._private_case = TFPLUGIN6__OPEN_EPHEMERAL_RESOURCE__RESPONSE___PRIVATE_PRIVATE;
    r.private_ = (ProtobufCBinaryData){3, (uint8_t *)"xyz"};
    uint8_t *p = pack(&r.base, &len);
    dec_opts opts = {{0, 0}, fake_redact, NULL, NULL};
    CHECK_STR_EQ(
        render("/tfplugin6.Provider/OpenEphemeralResource", 1, p, len, "test_eph", &opts, &rc),
        "{\"diagnostics\":[],\"renew_at\":{\"seconds\":1700000000,\"nanos\":5},"
        "\"result\":{\"secret\":{\"$sensitive\":\"hmac-sha256:"
        "5b9929d2f7ee9f74ff3d3a9c54638e22a95d50d2a3979be44d89f817353933aa\"}},"
        "\"private\":{\"size\":3,\"sha256\":\"" SHA256_XYZ "\"},\"deferred\":null}");
    /* Optional fields left unset are left out. */
    r._renew_at_case = TFPLUGIN6__OPEN_EPHEMERAL_RESOURCE__RESPONSE___RENEW_AT__NOT_SET;
    r._private_case = TFPLUGIN6__OPEN_EPHEMERAL_RESOURCE__RESPONSE___PRIVATE__NOT_SET;
    r.result = NULL;
    p = pack(&r.base, &len);
    CHECK_STR_EQ(
        render("/tfplugin6.Provider/OpenEphemeralResource", 1, p, len, "test_eph", &opts, &rc),
        "{\"diagnostics\":[],\"result\":null,\"deferred\":null}");

    Plugin__StdioData sd = PLUGIN__STDIO_DATA__INIT;
    sd.channel = PLUGIN__STDIO_DATA__CHANNEL__STDERR;
    sd.data = (ProtobufCBinaryData){5, (uint8_t *)"hi\n\xff!"};
    p = pack(&sd.base, &len);
    CHECK_STR_EQ(render("/plugin.GRPCStdio/StreamStdio", 1, p, len, NULL, NULL, &rc),
                 "{\"channel\":\"STDERR\",\"data\":\"aGkK/yE=\"}");
    CHECK_STR_EQ(render("/plugin.GRPCStdio/StreamStdio", 0, p, 0, NULL, NULL, &rc), "{}");
    /* An enum value newer than us shows as its number. */
    CHECK_STR_EQ(
        render("/plugin.GRPCStdio/StreamStdio", 1, (const uint8_t *)"\x08\x07", 2, NULL, NULL, &rc),
        "{\"channel\":7,\"data\":\"\"}");
    keep_free();
}

static void test_v5_configure(void)
{
    Tfplugin5__DynamicValue dv = TFPLUGIN5__DYNAMIC_VALUE__INIT;
    mp_begin();
    msgpack_pack_map(&pk, 2);
    mp_str("region");
    mp_str("eu\xc3\xa9");
    mp_str("token");
    msgpack_pack_nil(&pk);
    dv.msgpack = mp_end();
    Tfplugin5__Configure__Request req = TFPLUGIN5__CONFIGURE__REQUEST__INIT;
    req.terraform_version = "1.10.0\xff";
    req.config = &dv;
    size_t len;
    int rc;
    uint8_t *p = pack(&req.base, &len);
    /* Strings that are not UTF-8 get U+FFFD, never invalid JSON. */
    CHECK_STR_EQ(render("/tfplugin5.Provider/Configure", 0, p, len, NULL, NULL, &rc),
                 "{\"terraform_version\":\"1.10.0\xef\xbf\xbd\",\"config\":{\"region\":"
                 "\"eu\xc3\xa9\",\"token\":null},\"client_capabilities\":null}");
    keep_free();
}

/* Schema responses are messages too: cty type bytes show as the JSON they
 * hold, maps as objects. */
static void test_schema_response(void)
{
    Tfplugin6__Schema__Attribute a = TFPLUGIN6__SCHEMA__ATTRIBUTE__INIT;
    a.name = "tags";
    a.type = (ProtobufCBinaryData){16, (uint8_t *)"[\"map\",\"string\"]"};
    a.optional = 1;
    Tfplugin6__Schema__Attribute *attrs[] = {&a};
    Tfplugin6__Schema__Block blk = TFPLUGIN6__SCHEMA__BLOCK__INIT;
    blk.n_attributes = 1;
    blk.attributes = attrs;
    Tfplugin6__Schema sch = TFPLUGIN6__SCHEMA__INIT;
    sch.version = 2;
    sch.block = &blk;
    Tfplugin6__GetProviderSchema__Response__ResourceSchemasEntry e =
        TFPLUGIN6__GET_PROVIDER_SCHEMA__RESPONSE__RESOURCE_SCHEMAS_ENTRY__INIT;
    e.key = "test_thing";
    e.value = &sch;
    Tfplugin6__GetProviderSchema__Response__ResourceSchemasEntry *es[] = {&e};
    Tfplugin6__GetProviderSchema__Response r = TFPLUGIN6__GET_PROVIDER_SCHEMA__RESPONSE__INIT;
    r.n_resource_schemas = 1;
    r.resource_schemas = es;
    size_t len;
    int rc;
    uint8_t *p = pack(&r.base, &len);
    CHECK_STR_EQ(
        render("/tfplugin6.Provider/GetProviderSchema", 1, p, len, NULL, NULL, &rc),
        "{\"provider\":null,\"resource_schemas\":{\"test_thing\":{\"version\":2,\"block\":{"
        "\"version\":0,\"attributes\":[{\"name\":\"tags\",\"type\":[\"map\",\"string\"],"
        "\"description\":\"\",\"required\":false,\"optional\":true,\"computed\":false,"
        "\"sensitive\":false,\"description_kind\":\"PLAIN\",\"deprecated\":false,"
        "\"nested_type\":null,\"write_only\":false,\"deprecation_message\":\"\"}],"
        "\"block_types\":[],\"description\":\"\",\"description_kind\":\"PLAIN\","
        "\"deprecated\":false,\"deprecation_message\":\"\"}}},\"data_source_schemas\":{},"
        "\"diagnostics\":[],\"provider_meta\":null,\"server_capabilities\":null,"
        "\"functions\":{},\"ephemeral_resource_schemas\":{},\"list_resource_schemas\":{},"
        "\"state_store_schemas\":{},\"action_schemas\":{}}");
    keep_free();
}

/* ---- what the newest protocol files added or renamed -------------------------- */

#define HUNTER2_REDACTED                                                                           \
    "{\"$sensitive\":\"hmac-sha256:"                                                               \
    "4ddbb67bf993867e13253c146a339ed3b33ea5b895543569278e99d5b3c2b7d5\"}"

static void test_current_protocol(void)
{
    size_t len;
    int rc;
    char *tn = NULL;
    dec_opts opts = {{0, 0}, fake_redact, NULL, NULL};

    /* GenerateResourceConfig: the state in and the configuration out both
     * decode with the resource type's schema, secrets redacted. */
    Tfplugin6__GenerateResourceConfig__Request gr =
        TFPLUGIN6__GENERATE_RESOURCE_CONFIG__REQUEST__INIT;
    gr.type_name = "test_thing";
    mp_begin();
    msgpack_pack_map(&pk, 4);
    mp_str("id");
    mp_str("i-1");
    mp_str("password");
    mp_str("hunter2");
    mp_str("rule");
    msgpack_pack_array(&pk, 0);
    mp_str("tags");
    msgpack_pack_nil(&pk);
    gr.state = dv6(mp_end());
    uint8_t *p = pack(&gr.base, &len);
    const char *m = "/tfplugin6.Provider/GenerateResourceConfig";
    CHECK_STR_EQ(
        render(m, 0, p, len, NULL, &opts, &rc),
        "{\"type_name\":\"test_thing\",\"state\":{\"id\":\"i-1\",\"password\":" HUNTER2_REDACTED
        ",\"rule\":[],\"tags\":null}}");
    CHECK_INT_EQ(dec_request_type_name(m, p, len, &tn), 0);
    CHECK_STR_EQ(tn, "test_thing");
    free(tn);
    Tfplugin6__GenerateResourceConfig__Response grr =
        TFPLUGIN6__GENERATE_RESOURCE_CONFIG__RESPONSE__INIT;
    grr.config = dv6_json("{\"id\":null,\"password\":\"hunter2\",\"rule\":[],\"tags\":null}");
    p = pack(&grr.base, &len);
    CHECK_STR_EQ(render(m, 1, p, len, "test_thing", &opts, &rc),
                 "{\"config\":{\"id\":null,\"password\":" HUNTER2_REDACTED
                 ",\"rule\":[],\"tags\":null},\"diagnostics\":[]}");
    /* Protocol 5 has it too. */
    Tfplugin5__GenerateResourceConfig__Request gr5 =
        TFPLUGIN5__GENERATE_RESOURCE_CONFIG__REQUEST__INIT;
    Tfplugin5__DynamicValue dv5 = TFPLUGIN5__DYNAMIC_VALUE__INIT;
    dv5.json = (ProtobufCBinaryData){13, (uint8_t *)"{\"n\":1.50000}"};
    gr5.type_name = "test_other";
    gr5.state = &dv5;
    p = pack(&gr5.base, &len);
    CHECK_STR_EQ(render("/tfplugin5.Provider/GenerateResourceConfig", 0, p, len, NULL, NULL, &rc),
                 "{\"type_name\":\"test_other\",\"state\":{\"n\":1.50000}}");

    /* A state store's configuration decodes with the state store's schema,
     * in ValidateStateStoreConfig (message ValidateStateStore) and
     * ConfigureStateStore alike. */
    Tfplugin6__ValidateStateStore__Request vs = TFPLUGIN6__VALIDATE_STATE_STORE__REQUEST__INIT;
    vs.type_name = "test_store";
    mp_begin();
    msgpack_pack_map(&pk, 2);
    mp_str("bucket");
    mp_str("b");
    mp_str("key");
    mp_str("hunter2");
    vs.config = dv6(mp_end());
    p = pack(&vs.base, &len);
    m = "/tfplugin6.Provider/ValidateStateStoreConfig";
    CHECK_STR_EQ(
        render(m, 0, p, len, NULL, &opts, &rc),
        "{\"type_name\":\"test_store\",\"config\":{\"bucket\":\"b\",\"key\":" HUNTER2_REDACTED
        "}}");
    CHECK_INT_EQ(dec_request_type_name(m, p, len, &tn), 0);
    CHECK_STR_EQ(tn, "test_store");
    free(tn);
    Tfplugin6__ConfigureStateStore__Request cs = TFPLUGIN6__CONFIGURE_STATE_STORE__REQUEST__INIT;
    Tfplugin6__StateStoreClientCapabilities cc = TFPLUGIN6__STATE_STORE_CLIENT_CAPABILITIES__INIT;
    cc.chunk_size = 8 << 20;
    cs.type_name = "test_store";
    cs.config = vs.config;
    cs.capabilities = &cc;
    p = pack(&cs.base, &len);
    CHECK_STR_EQ(
        render("/tfplugin6.Provider/ConfigureStateStore", 0, p, len, NULL, &opts, &rc),
        "{\"type_name\":\"test_store\",\"config\":{\"bucket\":\"b\",\"key\":" HUNTER2_REDACTED
        "},\"capabilities\":{\"chunk_size\":8388608}}");

    /* Terraform's names: ReadStateBytes.Response, StateRange, state_id. */
    Tfplugin6__ReadStateBytes__Response rb = TFPLUGIN6__READ_STATE_BYTES__RESPONSE__INIT;
    Tfplugin6__StateRange range = TFPLUGIN6__STATE_RANGE__INIT;
    range.start = 0;
    range.end = 1;
    rb.bytes = (ProtobufCBinaryData){2, (uint8_t *)"{}"};
    rb.total_length = 2;
    rb.range = &range;
    p = pack(&rb.base, &len);
    CHECK_STR_EQ(render("/tfplugin6.Provider/ReadStateBytes", 1, p, len, NULL, NULL, &rc),
                 "{\"bytes\":\"e30=\",\"total_length\":2,\"range\":{\"start\":0,\"end\":1},"
                 "\"diagnostics\":[]}");
    /* Redacting, a state chunk is its size and hash: the state holds its
     * secrets in clear, and a chunk alone cannot be decoded to hide them. */
    CHECK_STR_EQ(render("/tfplugin6.Provider/ReadStateBytes", 1, p, len, NULL, &opts, &rc),
                 "{\"bytes\":{\"size\":2,\"sha256\":\"" SHA256_BRACES "\"},\"total_length\":2,"
                 "\"range\":{\"start\":0,\"end\":1},\"diagnostics\":[]}");
    Tfplugin6__WriteStateBytes__RequestChunk wc = TFPLUGIN6__WRITE_STATE_BYTES__REQUEST_CHUNK__INIT;
    wc.bytes = (ProtobufCBinaryData){2, (uint8_t *)"{}"};
    wc.total_length = 2;
    p = pack(&wc.base, &len);
    CHECK(strstr(render("/tfplugin6.Provider/WriteStateBytes", 0, p, len, NULL, &opts, &rc),
                 "\"bytes\":{\"size\":2,\"sha256\":\"" SHA256_BRACES "\"}") != NULL);
    Tfplugin6__GetStates__Response gs = TFPLUGIN6__GET_STATES__RESPONSE__INIT;
    char *ids[] = {"default", "prod"};
    gs.n_state_id = 2;
    gs.state_id = ids;
    p = pack(&gs.base, &len);
    CHECK_STR_EQ(render("/tfplugin6.Provider/GetStates", 1, p, len, "test_store", NULL, &rc),
                 "{\"state_id\":[\"default\",\"prod\"],\"diagnostics\":[]}");

    /* ValidateActionConfig names its action type_name (field 1). */
    Tfplugin6__ValidateActionConfig__Request va = TFPLUGIN6__VALIDATE_ACTION_CONFIG__REQUEST__INIT;
    va.type_name = "test_act";
    p = pack(&va.base, &len);
    m = "/tfplugin6.Provider/ValidateActionConfig";
    CHECK_STR_EQ(render(m, 0, p, len, NULL, NULL, &rc),
                 "{\"type_name\":\"test_act\",\"config\":null}");
    CHECK_INT_EQ(dec_request_type_name(m, p, len, &tn), 0);
    CHECK_STR_EQ(tn, "test_act");
    free(tn);

    /* GetMetadata: the new capability, Terraform's EphemeralMetadata; in
     * protocol 5, actions at 9 (5.11) and at 8 (5.10) both decode. */
    Tfplugin6__ServerCapabilities sc = TFPLUGIN6__SERVER_CAPABILITIES__INIT;
    sc.generate_resource_config = 1;
    Tfplugin6__GetMetadata__EphemeralMetadata em =
        TFPLUGIN6__GET_METADATA__EPHEMERAL_METADATA__INIT;
    em.type_name = "test_eph";
    Tfplugin6__GetMetadata__EphemeralMetadata *ems[] = {&em};
    Tfplugin6__GetMetadata__Response md = TFPLUGIN6__GET_METADATA__RESPONSE__INIT;
    md.server_capabilities = &sc;
    md.n_ephemeral_resources = 1;
    md.ephemeral_resources = ems;
    p = pack(&md.base, &len);
    CHECK_STR_EQ(render("/tfplugin6.Provider/GetMetadata", 1, p, len, NULL, NULL, &rc),
                 "{\"server_capabilities\":{\"plan_destroy\":false,"
                 "\"get_provider_schema_optional\":false,\"move_resource_state\":false,"
                 "\"generate_resource_config\":true},\"diagnostics\":[],\"data_sources\":[],"
                 "\"resources\":[],\"functions\":[],"
                 "\"ephemeral_resources\":[{\"type_name\":\"test_eph\"}],\"list_resources\":[],"
                 "\"state_stores\":[],\"actions\":[]}");
    static const uint8_t md5[] = {0x42, 0x03, 0x0a, 0x01, 'a', 0x4a, 0x03, 0x0a, 0x01, 'b'};
    CHECK_STR_EQ(render("/tfplugin5.Provider/GetMetadata", 1, md5, sizeof md5, NULL, NULL, &rc),
                 "{\"server_capabilities\":null,\"diagnostics\":[],\"data_sources\":[],"
                 "\"resources\":[],\"functions\":[],\"ephemeral_resources\":[],"
                 "\"list_resources\":[],\"actions_5_10\":[{\"type_name\":\"a\"}],"
                 "\"actions\":[{\"type_name\":\"b\"}]}");
    keep_free();
}

/* LIST and MAP blocks holding `dynamic` travel as dynamic values. The bytes
 * are go-cty's msgpack.Marshal of a value of OpenTofu's own ImpliedType()
 * for such a schema (configschema, OpenTofu v1.10). */
static void test_dynamic_blocks(void)
{
    static const char doc[] =
        "{\"provider_schemas\":{\"t/dyn\":{\"resource_schemas\":{\"dyn\":{\"block\":{"
        "\"block_types\":{\"dl\":{\"nesting_mode\":\"list\",\"block\":{\"attributes\":{"
        "\"d\":{\"type\":\"dynamic\",\"optional\":true}}}},"
        "\"ml\":{\"nesting_mode\":\"map\",\"block\":{\"attributes\":{"
        "\"d\":{\"type\":[\"list\",\"dynamic\"],\"optional\":true}}}}}}}}}}}";
    static const char hex[] =
        "82a2646c92c4255b227475706c65222c5b5b226f626a656374222c7b2264223a22737472696e67227d5d5d5d"
        "9181a164a178a26d6c92c40d5b226f626a656374222c7b7d5d80";
    uint8_t mp[sizeof hex / 2];
    for (size_t i = 0; i < sizeof mp; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        mp[i] = (uint8_t)v;
    }
    dec_schema *dyn = NULL;
    dec_error err = DEC_ERROR_INIT;
    CHECK_INT_EQ(dec_schema_from_cli_json(doc, sizeof doc - 1, NULL, NULL, &dyn, &err), 0);
    dec_error_done(&err);
    Tfplugin6__ReadResource__Request r = TFPLUGIN6__READ_RESOURCE__REQUEST__INIT;
    r.type_name = "dyn";
    r.current_state = dv6((ProtobufCBinaryData){sizeof mp, mp});
    size_t len;
    int rc;
    uint8_t *p = pack(&r.base, &len);
    dec_schema *saved = schema;
    schema = dyn;
    CHECK_STR_EQ(render("/tfplugin6.Provider/ReadResource", 0, p, len, NULL, NULL, &rc),
                 "{\"type_name\":\"dyn\",\"current_state\":{"
                 "\"dl\":{\"type\":[\"tuple\",[[\"object\",{\"d\":\"string\"}]]],"
                 "\"value\":[{\"d\":\"x\"}]},"
                 "\"ml\":{\"type\":[\"object\",{}],\"value\":{}}},"
                 "\"private\":{\"size\":0,\"sha256\":\"" SHA256_EMPTY "\"},"
                 "\"provider_meta\":null,\"client_capabilities\":null,\"current_identity\":null}");
    schema = saved;
    dec_schema_free(dyn);
    keep_free();
}

/* ---- re-redacting rendered JSON (bundles) ------------------------------------ */

static char *redact_again(const char *method, int is_response, const char *json,
                          const dec_schema *sch, const char *type_name, int *rc)
{
    static tftap_buf out;
    dec_error err = DEC_ERROR_INIT;
    dec_opts opts = {{0, 0}, fake_redact, NULL, NULL};
    tftap_buf_reset(&out);
    tftap_buf_puts(&out, "<");
    *rc = dec_message_json_redact(method, is_response, json, strlen(json), sch, type_name, &opts,
                                  &out, &err);
    if (*rc) {
        CHECK_STR_EQ(tftap_buf_cstr(&out), "<"); /* restored on failure */
        tftap_buf_reset(&out);
        tftap_buf_printf(&out, "error %d: %s", *rc, err.reason ? err.reason : "?");
    }
    dec_error_done(&err);
    const char *r = tftap_buf_cstr(&out);
    return (char *)(*rc ? r : r + 1);
}

static void test_redact_json(void)
{
    size_t len;
    int rc;
    const char *m = "/tfplugin6.Provider/PlanResourceChange";
    uint8_t *req = plan_request(&len);
    /* A message recorded in clear, redacted afterwards by the schema's
     * marks, reads exactly as one redacted while recording. */
    char *clear = strdup(render(m, 0, req, len, NULL, NULL, &rc));
    dec_opts opts = {{0, 0}, fake_redact, NULL, NULL};
    char *redacted = strdup(render(m, 0, req, len, NULL, &opts, &rc));
    CHECK_STR_EQ(redact_again(m, 0, clear, schema, NULL, &rc), redacted);
    CHECK_INT_EQ(rc, 0);
    /* An already redacted value is handed over whole, to be keyed again. */
    char hex[65], want[128];
    const char *marker = "{\"$sensitive\":\"hmac-sha256:"
                         "4ddbb67bf993867e13253c146a339ed3b33ea5b895543569278e99d5b3c2b7d5\"}";
    tftap_sha256_hex(marker, strlen(marker), hex);
    snprintf(want, sizeof want, "{\"$sensitive\":\"hmac-sha256:%s\"}", hex);
    tftap_buf exp = TFTAP_BUF_INIT;
    tftap_buf_puts(&exp, PLAN_REQUEST_JSON("@"));
    for (char *at; (at = strchr(tftap_buf_cstr(&exp), '@'));) {
        size_t off = (size_t)(at - exp.data);
        tftap_buf rest = TFTAP_BUF_INIT;
        tftap_buf_puts(&rest, at + 1);
        exp.len = off;
        tftap_buf_puts(&exp, want);
        tftap_buf_append(&exp, rest.data, rest.len);
        tftap_buf_done(&rest);
    }
    CHECK_STR_EQ(redact_again(m, 0, redacted, schema, NULL, &rc), tftap_buf_cstr(&exp));
    tftap_buf_done(&exp);
    /* Decoded values with no schema to tell their secrets by: refused. */
    CHECK_STR_EQ(redact_again(m, 0, clear, NULL, NULL, &rc),
                 "error -6: a decoded value of test_thing has no schema to tell its secrets by");
    CHECK_INT_EQ(rc, TFTAP_ENOTFOUND);
    /* A stream's messages, each redacted; {"$sensitive"} anywhere too
     * (sha256 of "p" and of {"$sensitive":"q"}). */
    CHECK_STR_EQ(
        redact_again("/tfplugin6.Provider/ReadResource", 1,
                     "[{\"new_state\":{\"password\":\"p\",\"id\":null}},"
                     "{\"x\":{\"$sensitive\":\"q\"}}]",
                     schema, "test_thing", &rc),
        "[{\"new_state\":{\"password\":{\"$sensitive\":\"hmac-sha256:"
        "1fb680aa1ed965bc09f024abd808fad41e7fa0bb2e1ec39e8f237d653d56b456\"},\"id\":null}},"
        "{\"x\":{\"$sensitive\":\"hmac-sha256:"
        "82d30dde899ab6a09e3d48790de390594af7cb52a45f85bed1a8bc452f156ada\"}}]");
    /* Stored state (RawState) by the resource type's schema; legacy
     * flatmap values each; state of no known type whole. */
    const char *up = "/tfplugin6.Provider/UpgradeResourceState";
    char pw[65], tagv[65], whole[65];
    tftap_sha256_hex("\"hunter2\"", 9, pw);
    tftap_sha256_hex("\"0\"", 3, tagv);
    tftap_sha256_hex("{\"password\":\"hunter2\"}", 22, whole);
    tftap_buf w2 = TFTAP_BUF_INIT;
    tftap_buf_printf(
        &w2,
        "{\"type_name\":\"test_thing\",\"version\":1,\"raw_state\":{\"json\":"
        "{\"id\":\"x\",\"password\":{\"$sensitive\":\"hmac-sha256:%s\"},\"tags\":null},"
        "\"flatmap\":{\"tags.%%\":{\"$sensitive\":\"hmac-sha256:%s\"}}}}",
        pw, tagv);
    CHECK_STR_EQ(redact_again(up, 0,
                              "{\"type_name\":\"test_thing\",\"version\":1,\"raw_state\":{\"json\":"
                              "{\"id\":\"x\",\"password\":\"hunter2\",\"tags\":null},"
                              "\"flatmap\":{\"tags.%\":\"0\"}}}",
                              schema, NULL, &rc),
                 tftap_buf_cstr(&w2));
    tftap_buf_reset(&w2);
    tftap_buf_printf(&w2,
                     "{\"type_name\":\"test_nosuch\",\"raw_state\":{\"json\":"
                     "{\"$sensitive\":\"hmac-sha256:%s\"}}}",
                     whole);
    CHECK_STR_EQ(redact_again(up, 0,
                              "{\"type_name\":\"test_nosuch\",\"raw_state\":{\"json\":"
                              "{\"password\":\"hunter2\"}}}",
                              schema, NULL, &rc),
                 tftap_buf_cstr(&w2));
    tftap_buf_done(&w2);
    /* The recorder redacts stored state as it renders it, the same way. */
    Tfplugin6__RawState raw = TFPLUGIN6__RAW_STATE__INIT;
    const char *state = "{\"id\":\"x\",\"password\":\"hunter2\",\"tags\":null}";
    raw.json = (ProtobufCBinaryData){strlen(state), (uint8_t *)state};
    Tfplugin6__UpgradeResourceState__Request ur = TFPLUGIN6__UPGRADE_RESOURCE_STATE__REQUEST__INIT;
    ur.type_name = "test_thing";
    ur.version = 1;
    ur.raw_state = &raw;
    uint8_t *urp = pack(&ur.base, &len);
    tftap_buf w3 = TFTAP_BUF_INIT;
    tftap_buf_printf(
        &w3,
        "{\"type_name\":\"test_thing\",\"version\":1,\"raw_state\":{\"json\":"
        "{\"id\":\"x\",\"password\":{\"$sensitive\":\"hmac-sha256:%s\"},\"tags\":null},"
        "\"flatmap\":{}}}",
        pw);
    CHECK_STR_EQ(render(up, 0, urp, len, NULL, &opts, &rc), tftap_buf_cstr(&w3));
    /* Not redacting: as it was sent. */
    CHECK_STR_EQ(render(up, 0, urp, len, NULL, NULL, &rc),
                 "{\"type_name\":\"test_thing\",\"version\":1,\"raw_state\":{\"json\":"
                 "{\"id\":\"x\",\"password\":\"hunter2\",\"tags\":null},\"flatmap\":{}}}");
    tftap_buf_done(&w3);
    /* Not JSON: an error, nothing written. */
    CHECK_STR_EQ(redact_again(m, 0, "{\"config\":", schema, NULL, &rc), "error -3: invalid JSON");
    free(clear);
    free(redacted);
}

/* A memo: a value with the bytes of one rendered before is copied, not
 * decoded again (its secret not hashed again), and the JSON is the same. */
static void test_memo(void)
{
    const char *m = "/tfplugin6.Provider/PlanResourceChange";
    Tfplugin6__PlanResourceChange__Request *q = keep(calloc(1, sizeof *q));
    tfplugin6__plan_resource_change__request__init(q);
    q->type_name = "test_thing";
    mp_begin();
    msgpack_pack_map(&pk, 4);
    mp_str("id");
    mp_str("i-1");
    mp_str("password");
    mp_str("hunter2");
    mp_str("rule");
    msgpack_pack_nil(&pk);
    mp_str("tags");
    msgpack_pack_nil(&pk);
    ProtobufCBinaryData state = mp_end();
    q->prior_state = dv6(state);
    q->proposed_new_state = dv6(state);
    q->config = dv6_json("{\"id\":\"i-1\",\"password\":\"hunter2\",\"rule\":null,\"tags\":null}");
    size_t qn, pn;
    uint8_t *qb = pack(&q->base, &qn);
    Tfplugin6__PlanResourceChange__Response *p = keep(calloc(1, sizeof *p));
    tfplugin6__plan_resource_change__response__init(p);
    p->planned_state = dv6(state);
    uint8_t *pb = pack(&p->base, &pn);

    int rc;
    dec_opts plain = {{0, 0}, counting_redact, NULL, NULL};
    redactions = 0;
    char *want_q = strdup(render(m, 0, qb, qn, NULL, &plain, &rc));
    char *want_p = strdup(render(m, 1, pb, pn, "test_thing", &plain, &rc));
    CHECK_INT_EQ(redactions, 4);
    CHECK(strstr(want_p, "{\"planned_state\":{\"id\":\"i-1\",\"password\":{\"$sensitive\"") ==
          want_p);
    dec_memo *memo = dec_memo_new();
    dec_opts opts = {{0, 0}, counting_redact, NULL, memo};
    redactions = 0;
    CHECK_STR_EQ(render(m, 0, qb, qn, NULL, &opts, &rc), want_q);
    CHECK_INT_EQ(redactions, 2); /* prior; the proposed state is its copy; config is JSON */
    CHECK_STR_EQ(render(m, 1, pb, pn, "test_thing", &opts, &rc), want_p);
    CHECK_INT_EQ(redactions, 2); /* the planned state too */
    dec_memo_clear(memo);
    CHECK_STR_EQ(render(m, 1, pb, pn, "test_thing", &opts, &rc), want_p);
    CHECK_INT_EQ(redactions, 3);
    dec_memo_free(memo);
    free(want_q);
    free(want_p);
}

/* ---- big values ---------------------------------------------------------------- */

/* A PlanResourceChange request whose tags hold one string of n bytes, in
 * msgpack (proposed_new_state) and JSON (config). */
static uint8_t *big_request(size_t n, const char *password, size_t *len)
{
    char *big = keep(malloc(n + 1));
    for (size_t i = 0; i < n; i++)
        big[i] = (char)('a' + i % 26);
    big[n] = '\0';
    Tfplugin6__PlanResourceChange__Request *r = keep(calloc(1, sizeof *r));
    tfplugin6__plan_resource_change__request__init(r);
    r->type_name = "test_thing";
    mp_begin();
    msgpack_pack_map(&pk, 4);
    mp_str("id");
    msgpack_pack_nil(&pk);
    mp_str("password");
    mp_str(password);
    mp_str("rule");
    msgpack_pack_nil(&pk);
    mp_str("tags");
    msgpack_pack_map(&pk, 1);
    mp_str("big");
    mp_str(big);
    r->proposed_new_state = dv6(mp_end());
    tftap_buf j = TFTAP_BUF_INIT;
    tftap_buf_printf(&j,
                     "{\"id\":null,\"password\":\"%s\",\"rule\":null,\"tags\":{\"big\":\"%s\"}}",
                     password, big);
    r->config = dv6_json(keep(tftap_buf_take(&j, NULL)));
    return pack(&r->base, len);
}

/* Messages of 1 MiB or more are unpacked without their big DynamicValues,
 * which are read in place: the JSON must be the same as for small ones. */
static void test_big_values(void)
{
    const char *m = "/tfplugin6.Provider/PlanResourceChange";
    size_t sizes[] = {1000, (size_t)3 << 20};
    for (size_t k = 0; k < 2; k++) {
        size_t n = sizes[k], len;
        uint8_t *req = big_request(n, "hunter2", &len);
        CHECK(k == 0 ? len < ((size_t)1 << 20) : len > ((size_t)6 << 20));
        tftap_buf want = TFTAP_BUF_INIT;
        char *big = keep(malloc(n));
        for (size_t i = 0; i < n; i++)
            big[i] = (char)('a' + i % 26);
        size_t bn = n;
        tftap_buf_puts(&want, "{\"type_name\":\"test_thing\",\"prior_state\":null,"
                              "\"proposed_new_state\":{\"id\":null,\"password\":\"hunter2\","
                              "\"rule\":null,\"tags\":{\"big\":\"");
        tftap_buf_append(&want, big, bn);
        tftap_buf_puts(&want, "\"}},\"config\":{\"id\":null,\"password\":\"hunter2\",\"rule\":null,"
                              "\"tags\":{\"big\":\"");
        tftap_buf_append(&want, big, bn);
        tftap_buf_puts(&want,
                       "\"}},\"prior_private\":{\"size\":0,\"sha256\":"
                       "\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"},"
                       "\"provider_meta\":null,\"client_capabilities\":null,"
                       "\"prior_identity\":null}");
        int rc;
        char *got = render(m, 0, req, len, NULL, NULL, &rc);
        CHECK_INT_EQ(rc, 0);
        CHECK_INT_EQ(strlen(got), want.len);
        CHECK(strcmp(got, tftap_buf_cstr(&want)) == 0);
        /* Redaction applies to values read in place as well. */
        dec_opts opts = {{0, 0}, fake_redact, NULL, NULL};
        got = render(m, 0, req, len, NULL, &opts, &rc);
        CHECK_INT_EQ(rc, 0);
        CHECK(strstr(got, "hunter2") == NULL);
        CHECK(strstr(got, "\"password\":{\"$sensitive\":") != NULL);
        tftap_buf_done(&want);
    }
    /* The same big field twice (protobuf merges them): not read in place, the
     * last value's bytes win as protobuf-c has it. */
    size_t l1, l2;
    uint8_t *a = big_request((size_t)1 << 20, "first", &l1);
    uint8_t *b = big_request((size_t)1 << 20, "second", &l2);
    uint8_t *ab = keep(malloc(l1 + l2));
    memcpy(ab, a, l1);
    memcpy(ab + l1, b, l2);
    int rc;
    char *got = render(m, 0, ab, l1 + l2, NULL, NULL, &rc);
    CHECK_INT_EQ(rc, 0);
    CHECK(strstr(got, "\"password\":\"second\"") != NULL);
    CHECK(strstr(got, "\"first\"") == NULL);
}

int main(void)
{
    dec_error err = DEC_ERROR_INIT;
    CHECK_INT_EQ(
        dec_schema_from_cli_json(schema_json, sizeof schema_json - 1, NULL, NULL, &schema, &err),
        0);
    if (err.code)
        fprintf(stderr, "schema: %s: %s\n", err.path, err.reason);
    dec_error_done(&err);
    test_plan();
    test_bad_value();
    test_unknown_fields();
    test_methods();
    test_call_function();
    test_upgrade_import_move();
    test_ephemeral_and_stdio();
    test_v5_configure();
    test_schema_response();
    test_current_protocol();
    test_dynamic_blocks();
    test_redact_json();
    test_memo();
    test_big_values();
    dec_schema_free(schema);
    return check_report("test_message");
}
