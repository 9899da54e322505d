/* libFuzzer target: everything that parses protobuf from a peer. An input is
 * a selector line and a payload:
 *
 *   /tfplugin6.Provider/PlanResourceChange\nq<request bytes>
 *   /tfplugin6.Provider/PlanResourceChange\ns<response bytes>
 *   schema5\n<GetProviderSchema response>   (also schema6, identities5/6)
 *
 * Messages render against a small fixed schema; success must yield valid
 * UTF-8 JSON, failure an error with a reason and the output untouched. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/decoder_int.h"

static const char schema_json[] =
    "{\"provider_schemas\":{\"t/test\":{"
    "\"provider\":{\"block\":{\"attributes\":{\"token\":{\"type\":\"string\",\"sensitive\":true}}}}"
    ","
    "\"resource_schemas\":{\"test_thing\":{\"block\":{\"attributes\":{"
    "\"id\":{\"type\":\"string\"},\"password\":{\"type\":\"string\",\"sensitive\":true},"
    "\"tags\":{\"type\":[\"map\",\"string\"]},\"any\":{\"type\":\"dynamic\"}},"
    "\"block_types\":{\"rule\":{\"nesting_mode\":\"list\",\"block\":{\"attributes\":{"
    "\"port\":{\"type\":\"number\"}}}}}}}},"
    "\"data_source_schemas\":{\"test_ds\":{\"block\":{\"attributes\":{\"q\":{\"type\":\"string\"}}}"
    "}},"
    "\"ephemeral_resource_schemas\":{\"test_eph\":{\"block\":{\"attributes\":{"
    "\"secret\":{\"type\":\"string\",\"sensitive\":true}}}}},"
    "\"functions\":{\"echo\":{\"return_type\":[\"list\",\"string\"],"
    "\"parameters\":[{\"name\":\"s\",\"type\":\"string\"}],"
    "\"variadic_parameter\":{\"name\":\"rest\",\"type\":\"number\"}}},"
    "\"resource_identity_schemas\":{\"test_thing\":{\"attributes\":{\"id\":{\"type\":\"string\"}}}}"
    "}}}";

static dec_schema *schema;

static void redact(void *ctx, const char *json, size_t len, char out[65])
{
    (void)ctx;
    tftap_sha256_hex(json, len, out);
}

static void check_json(const tftap_buf *out, size_t from)
{
    const char *s = out->data + from;
    size_t n = out->len - from;
    if (!dec_utf8_valid(s, n))
        abort();
    sj_doc *j = NULL;
    if (sj_parse(s, n, 100000, &j) != 0)
        abort();
    sj_free(j);
}

static void schema_case(const char *sel, const uint8_t *p, size_t n, const dec_limits *lim)
{
    dec_schema *s = NULL;
    dec_error err = DEC_ERROR_INIT;
    int protocol = sel[strlen(sel) - 1] - '0';
    int rc;
    if (strncmp(sel, "schema", 6) == 0) {
        rc = dec_schema_from_provider_schema(protocol, p, n, lim, &s, &err);
        if (!rc) {
            /* Every lookup of a built schema must be safe. */
            dec_schema_lookup(s, DEC_SCHEMA_PROVIDER, NULL);
            dec_schema_lookup(s, DEC_SCHEMA_RESOURCE, "test_thing");
        }
    } else {
        rc = dec_schema_from_cli_json(schema_json, sizeof schema_json - 1, NULL, lim, &s, &err);
        if (rc)
            abort();
        rc = dec_schema_add_identities(s, protocol, p, n, &err);
    }
    if (rc && (!err.reason || !err.path))
        abort();
    if (!rc && err.code)
        abort();
    dec_error_done(&err);
    dec_schema_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size < 128 ? size : 128);
    if (!nl)
        return 0;
    char sel[129];
    size_t sl = (size_t)(nl - data);
    memcpy(sel, data, sl);
    sel[sl] = '\0';
    const uint8_t *p = nl + 1;
    size_t n = size - sl - 1;
    dec_limits lim = {.max_depth = 64};
    if (!schema) {
        dec_error err = DEC_ERROR_INIT;
        if (dec_schema_from_cli_json(schema_json, sizeof schema_json - 1, NULL, NULL, &schema,
                                     &err))
            abort(); /* the fixed schema is valid */
        dec_error_done(&err);
    }
    if (strcmp(sel, "schema5") == 0 || strcmp(sel, "schema6") == 0 ||
        strcmp(sel, "identities5") == 0 || strcmp(sel, "identities6") == 0) {
        schema_case(sel, p, n, &lim);
        return 0;
    }
    if (n < 1 || (p[0] != 'q' && p[0] != 's'))
        return 0;
    int is_response = p[0] == 's';
    p++;
    n--;

    char *type_name = NULL;
    int trc = dec_request_type_name(sel, p, n, &type_name);
    if (trc && type_name)
        abort();
    if (type_name && !dec_utf8_valid(type_name, strlen(type_name)))
        abort();

    dec_opts opts = {.limits = lim, .redact = redact};
    tftap_buf out = TFTAP_BUF_INIT;
    tftap_buf_puts(&out, "x");
    dec_error err = DEC_ERROR_INIT;
    /* Responses decode with the name a request would have carried. */
    int rc = dec_message_to_json(sel, is_response, p, n, schema,
                                 is_response ? "test_thing" : type_name, &opts, &out, &err);
    if (rc) {
        if (!err.reason || !err.path || out.len != 1)
            abort();
    } else {
        if (err.code || out.len < 3)
            abort();
        check_json(&out, 1);
    }
    dec_error_done(&err);
    tftap_buf_done(&out);
    free(type_name);
    return 0;
}
