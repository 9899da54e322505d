/* libFuzzer target: DynamicValue decoding. The first byte picks one of a
 * fixed set of types and the encoding (msgpack or JSON); the rest is the
 * payload. Success must produce valid-looking output; failure must leave an
 * error with a reason and the output buffer as it was. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/decoder.h"

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
    "\"rules\":[\"set\",[\"object\",{\"port\":\"number\",\"cidr\":[\"list\",\"string\"]}]],"
    "\"meta\":\"dynamic\"},[\"meta\"]]",
    "[\"list\",[\"list\",[\"list\",[\"map\",\"dynamic\"]]]]",
};
#define NTYPES (sizeof types / sizeof types[0])

static dec_type *parsed[NTYPES];

static void redact(void *ctx, const char *json, size_t len, char out[65])
{
    (void)ctx;
    tftap_sha256_hex(json, len, out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned pick = data[0] % NTYPES;
    int use_json = (data[0] / NTYPES) & 1;
    if (!parsed[pick]) {
        dec_error err = DEC_ERROR_INIT;
        if (dec_type_parse(types[pick], strlen(types[pick]), NULL, &parsed[pick], &err))
            abort(); /* the fixed types are valid */
        dec_error_done(&err);
    }
    dec_opts opts = {.limits = {.max_depth = 64}, .redact = redact};
    tftap_buf out = TFTAP_BUF_INIT;
    tftap_buf_puts(&out, "x");
    dec_error err = DEC_ERROR_INIT;
    int rc = use_json ? dec_json_to_json(parsed[pick], data + 1, size - 1, &opts, &out, &err)
                      : dec_msgpack_to_json(parsed[pick], data + 1, size - 1, &opts, &out, &err);
    if (rc) {
        if (!err.reason || !err.path || out.len != 1)
            abort();
    } else if (out.len < 2 || err.code) {
        abort();
    }
    dec_error_done(&err);
    tftap_buf_done(&out);
    return 0;
}
