/* libFuzzer target: re-redacting recorded JSON for a bundle (JSON read
 * from a database, so any bytes). An input is a selector line and JSON:
 *
 *   /tfplugin6.Provider/PlanResourceChange\nq{"type_name":"test_thing",...}
 *   /tfplugin6.Provider/ReadResource\ns[{...},{...}]
 *
 * against a small fixed schema. Success must yield valid JSON (UTF-8 when
 * the input is) that redacts again to itself but for the keys (the same
 * shape); failure an error with a reason and the output untouched. */
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

/* Keyed again, a redacted value keeps its form: only the hex changes. */
static void redact(void *ctx, const char *json, size_t len, char out[65])
{
    (void)ctx;
    tftap_sha256_hex(json, len, out);
}

static int run(const char *sel, int is_response, const char *p, size_t n, tftap_buf *out)
{
    dec_opts opts = {.limits = {.max_depth = 64}, .redact = redact};
    dec_error err = DEC_ERROR_INIT;
    size_t before = out->len;
    int rc =
        dec_message_json_redact(sel, is_response, p, n, schema, "test_thing", &opts, out, &err);
    if (rc) {
        if (!err.reason || !err.path || out->len != before)
            abort();
    } else {
        if (err.code || out->len == before)
            abort();
        const char *s = out->data + before;
        size_t len = out->len - before;
        sj_doc *j = NULL;
        /* Bytes that are not UTF-8 are copied, not made so. */
        if ((dec_utf8_valid(p, n) && !dec_utf8_valid(s, len)) || sj_parse(s, len, 100000, &j) != 0)
            abort();
        sj_free(j);
    }
    dec_error_done(&err);
    return rc;
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
    const char *p = (const char *)nl + 1;
    size_t n = size - sl - 1;
    if (n < 1 || (p[0] != 'q' && p[0] != 's'))
        return 0;
    int is_response = p[0] == 's';
    p++;
    n--;
    if (!schema) {
        dec_error err = DEC_ERROR_INIT;
        if (dec_schema_from_cli_json(schema_json, sizeof schema_json - 1, NULL, NULL, &schema,
                                     &err))
            abort(); /* the fixed schema is valid */
        dec_error_done(&err);
    }
    tftap_buf a = TFTAP_BUF_INIT, b = TFTAP_BUF_INIT;
    tftap_buf_puts(&a, "x");
    if (run(sel, is_response, p, n, &a) == 0) {
        /* Its own output redacts again without error, to the same length:
         * every redacted value is one {"$sensitive": "hmac-sha256:<64>"}. */
        tftap_buf_puts(&b, "x");
        if (run(sel, is_response, a.data + 1, a.len - 1, &b) != 0 || b.len != a.len)
            abort();
    }
    tftap_buf_done(&a);
    tftap_buf_done(&b);
    return 0;
}
