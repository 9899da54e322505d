/* libFuzzer target: the decoder's inverse (replay) over JSON input. An input
 * is a selector line and the JSON:
 *
 *   v<digit>\n<decoded value JSON>               a value of one of the types below
 *   /tfplugin6.Provider/PlanResourceChange\nq<request JSON>   (s: response JSON)
 *
 * Failure must leave an error with a reason and path and the output as it
 * was. Success must give bytes the decoder reads back (a size or depth limit
 * aside), and a value's bytes must encode again to the same bytes from their
 * own decoding: what the encoder writes is a fixed point. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/decoder_int.h"

static int dec_utf8_valid_text(const char *s)
{
    return dec_utf8_valid(s, strlen(s));
}

static const char *const types[] = {
    "\"string\"",
    "\"number\"",
    "\"bool\"",
    "\"dynamic\"",
    "[\"list\",\"string\"]",
    "[\"set\",\"number\"]",
    "[\"map\",\"dynamic\"]",
    "[\"tuple\",[\"string\",\"number\",\"bool\"]]",
    "[\"object\",{\"id\":\"string\",\"tags\":[\"map\",\"string\"],\"n\":\"number\","
    "\"disk\":[\"list\",[\"object\",{\"size\":\"number\",\"kind\":\"string\"}]],"
    "\"meta\":\"dynamic\"},[\"meta\"]]",
    "[\"list\",[\"list\",[\"map\",\"dynamic\"]]]",
};
#define NTYPES (sizeof types / sizeof types[0])

static dec_type *parsed[NTYPES];

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
    "\"functions\":{\"echo\":{\"return_type\":[\"list\",\"string\"],"
    "\"parameters\":[{\"name\":\"s\",\"type\":\"string\"}],"
    "\"variadic_parameter\":{\"name\":\"rest\",\"type\":\"number\"}}},"
    "\"resource_identity_schemas\":{\"test_thing\":{\"attributes\":{\"id\":{\"type\":\"string\"}}}}"
    "}}}";

static dec_schema *schema;

static void check_failure(int rc, const dec_error *err, const tftap_buf *out)
{
    if (rc && (!err->reason || !err->path || out->len != 1))
        abort();
    /* Errors are shown to users: never invalid UTF-8 from the input. */
    if (rc && (!dec_utf8_valid_text(err->path) || !dec_utf8_valid_text(err->reason)))
        abort();
    if (!rc && err->code)
        abort();
}

static void value_case(unsigned pick, const char *json, size_t n, const dec_limits *lim)
{
    if (!parsed[pick]) {
        dec_error err = DEC_ERROR_INIT;
        if (dec_type_parse(types[pick], strlen(types[pick]), NULL, &parsed[pick], &err))
            abort(); /* the fixed types are valid */
        dec_error_done(&err);
    }
    const dec_type *t = parsed[pick];
    tftap_buf mp = TFTAP_BUF_INIT, back = TFTAP_BUF_INIT, again = TFTAP_BUF_INIT;
    dec_error err = DEC_ERROR_INIT;
    tftap_buf_puts(&mp, "x");
    int rc = dec_json_value_to_msgpack(t, json, n, lim, &mp, &err);
    check_failure(rc, &err, &mp);
    dec_error_done(&err);
    if (rc)
        goto out;
    dec_opts opts = {.limits = *lim};
    rc = dec_msgpack_to_json(t, mp.data + 1, mp.len - 1, &opts, &back, &err);
    dec_error_done(&err);
    if (rc == TFTAP_ELIMIT)
        goto out;
    if (rc)
        abort(); /* the encoder wrote what the decoder refuses */
    rc = dec_json_value_to_msgpack(t, back.data, back.len, lim, &again, &err);
    dec_error_done(&err);
    if (rc == TFTAP_ELIMIT)
        goto out;
    if (rc || again.len != mp.len - 1 || memcmp(again.data, mp.data + 1, again.len) != 0)
        abort();
out:
    tftap_buf_done(&mp);
    tftap_buf_done(&back);
    tftap_buf_done(&again);
}

static void message_case(const char *method, int is_response, const char *json, size_t n,
                         const dec_limits *lim)
{
    const char *tn = is_response ? "test_thing" : NULL;
    tftap_buf pb = TFTAP_BUF_INIT, back = TFTAP_BUF_INIT;
    dec_error err = DEC_ERROR_INIT;
    tftap_buf_puts(&pb, "x");
    int rc = dec_message_from_json(method, is_response, tn, json, n, schema, lim, &pb, &err);
    check_failure(rc, &err, &pb);
    dec_error_done(&err);
    if (!rc) {
        dec_opts opts = {.limits = *lim};
        rc = dec_message_to_json(method, is_response, pb.data + 1, pb.len - 1, schema, tn, &opts,
                                 &back, &err);
        dec_error_done(&err);
        if (rc && rc != TFTAP_ELIMIT)
            abort();
    }
    tftap_buf_done(&pb);
    tftap_buf_done(&back);
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
    dec_limits lim = {.max_depth = 64};
    if (!schema) {
        dec_error err = DEC_ERROR_INIT;
        if (dec_schema_from_cli_json(schema_json, sizeof schema_json - 1, NULL, NULL, &schema,
                                     &err))
            abort(); /* the fixed schema is valid */
        dec_error_done(&err);
    }
    if (sl == 2 && sel[0] == 'v' && sel[1] >= '0' && sel[1] <= '9') {
        value_case((unsigned)(sel[1] - '0') % NTYPES, p, n, &lim);
        return 0;
    }
    if (n < 1 || (p[0] != 'q' && p[0] != 's'))
        return 0;
    message_case(sel, p[0] == 's', p + 1, n - 1, &lim);
    return 0;
}
