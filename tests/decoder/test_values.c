/* Decoder unit tests at the C API: things the golden vectors cannot reach
 * through the command line (redaction, buffer behaviour on error, large
 * objects, default depth limit), with payloads built by msgpack-c. */
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/decoder_int.h"
#include "tests/check.h"

static dec_type *type_of(const char *json)
{
    dec_type *t = NULL;
    dec_error err = DEC_ERROR_INIT;
    if (dec_type_parse(json, strlen(json), NULL, &t, &err)) {
        fprintf(stderr, "bad test type %s: %s\n", json, err.reason);
        exit(1);
    }
    dec_error_done(&err);
    return t;
}

/* Decode sbuf against t; returns the JSON (static storage) or the error. */
static const char *decode(const dec_type *t, const msgpack_sbuffer *sb, const dec_opts *opts)
{
    static tftap_buf out = TFTAP_BUF_INIT;
    tftap_buf_reset(&out);
    dec_error err = DEC_ERROR_INIT;
    if (dec_msgpack_to_json(t, sb->data, sb->size, opts, &out, &err)) {
        dec_error_format(&err, &out);
    }
    dec_error_done(&err);
    return tftap_buf_cstr(&out);
}

static void pack_str(msgpack_packer *pk, const char *s)
{
    msgpack_pack_str(pk, strlen(s));
    msgpack_pack_str_body(pk, s, strlen(s));
}

static void fake_hmac(void *ctx, const char *json, size_t len, char out[65])
{
    /* Not a real HMAC: enough to see what the decoder hands over. */
    (void)ctx;
    memset(out, '0', 64);
    out[64] = '\0';
    snprintf(out, 65, "%zu:%.*s", len, (int)(len < 40 ? len : 40), json);
    for (size_t i = strlen(out); i < 64; i++)
        out[i] = '-';
    out[64] = '\0';
}

static void test_redaction(void)
{
    dec_type *t = type_of("[\"object\",{\"name\":\"string\",\"password\":\"string\","
                          "\"token\":\"string\",\"key\":\"string\"}]");
    /* mark password/token/key sensitive (as the schema model does) */
    ((struct dec_attr *)dec_type_attr(t, "password", 8))->sensitive = 1;
    ((struct dec_attr *)dec_type_attr(t, "token", 5))->sensitive = 1;
    ((struct dec_attr *)dec_type_attr(t, "key", 3))->write_only = 1;

    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 4);
    pack_str(&pk, "key");
    msgpack_pack_nil(&pk);
    pack_str(&pk, "name");
    pack_str(&pk, "web");
    pack_str(&pk, "password");
    pack_str(&pk, "hunter2");
    pack_str(&pk, "token");
    /* a refined unknown: the prefix must not leak */
    const char refined[] = {(char)0x82, 0x01, (char)0xc2, 0x02, (char)0xa3, 's', 'k', '-'};
    msgpack_pack_ext(&pk, sizeof refined, 12);
    msgpack_pack_ext_body(&pk, refined, sizeof refined);

    dec_opts opts = {.redact = fake_hmac};
    const char *got = decode(t, &sb, &opts);
    CHECK(strstr(got, "\"token\":{\"$unknown\":{}}") != NULL);
    CHECK(strstr(got, "sk-") == NULL);
    CHECK(strstr(got, "\"key\":null") != NULL);
    CHECK(strstr(got, "\"name\":\"web\"") != NULL);

    /* the hook sees the decoded JSON text of the value */
    const char *pw = strstr(got, "\"password\":{\"$sensitive\":\"hmac-sha256:");
    CHECK(pw != NULL);
    if (pw)
        CHECK(strncmp(pw + strlen("\"password\":{\"$sensitive\":\"hmac-sha256:"), "9:\"hunter2\"",
                      11) == 0);

    /* without a hook nothing is redacted */
    got = decode(t, &sb, NULL);
    CHECK(strstr(got, "\"password\":\"hunter2\"") != NULL);
    msgpack_sbuffer_destroy(&sb);
    dec_type_free(t);
}

static void test_error_restores_buffer(void)
{
    dec_type *t = type_of("[\"list\",\"number\"]");
    tftap_buf out = TFTAP_BUF_INIT;
    tftap_buf_puts(&out, "prefix:");
    const unsigned char bad[] = {0x92, 0x01, 0xa1, 'x'};
    dec_error err = DEC_ERROR_INIT;
    int rc = dec_msgpack_to_json(t, bad, sizeof bad, NULL, &out, &err);
    CHECK_INT_EQ(rc, TFTAP_EDECODE);
    CHECK_STR_EQ(tftap_buf_cstr(&out), "prefix:");
    CHECK_STR_EQ(err.path, ".[1]");
    CHECK_STR_EQ(err.reason, "number is required");
    dec_error_done(&err);

    const unsigned char good[] = {0x92, 0x01, 0x02};
    rc = dec_msgpack_to_json(t, good, sizeof good, NULL, &out, &err);
    CHECK_INT_EQ(rc, 0);
    CHECK_STR_EQ(tftap_buf_cstr(&out), "prefix:[1,2]");
    tftap_buf_done(&out);
    dec_type_free(t);
}

static void test_big_object(void)
{
    /* more than 64 attributes takes the heap-allocated "seen" path */
    tftap_buf tj = TFTAP_BUF_INIT;
    tftap_buf_puts(&tj, "[\"object\",{");
    for (int i = 0; i < 100; i++)
        tftap_buf_printf(&tj, "%s\"a%03d\":\"number\"", i ? "," : "", i);
    tftap_buf_puts(&tj, "}]");
    dec_type *t = type_of(tftap_buf_cstr(&tj));
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 100);
    for (int i = 99; i >= 0; i--) { /* any order is accepted */
        char k[8];
        snprintf(k, sizeof k, "a%03d", i);
        pack_str(&pk, k);
        msgpack_pack_int(&pk, i);
    }
    const char *got = decode(t, &sb, NULL);
    CHECK(strncmp(got, "{\"a099\":99,\"a098\":98,", 21) == 0);
    CHECK(strstr(got, "\"a000\":0}") != NULL);

    /* the same attribute twice among many */
    msgpack_sbuffer_clear(&sb);
    msgpack_pack_map(&pk, 100);
    for (int i = 0; i < 100; i++) {
        char k[8];
        snprintf(k, sizeof k, "a%03d", i == 70 ? 69 : i);
        pack_str(&pk, k);
        msgpack_pack_int(&pk, i);
    }
    CHECK_STR_EQ(decode(t, &sb, NULL), "decode error at .a069: duplicate attribute");
    msgpack_sbuffer_destroy(&sb);
    tftap_buf_done(&tj);
    dec_type_free(t);
}

static void test_default_depth(void)
{
    /* 256 nested lists decode with the default limit; 257 do not */
    for (int levels = 255; levels <= 257; levels++) {
        tftap_buf tj = TFTAP_BUF_INIT;
        for (int i = 0; i < levels; i++)
            tftap_buf_puts(&tj, "[\"list\",");
        tftap_buf_puts(&tj, "\"bool\"");
        for (int i = 0; i < levels; i++)
            tftap_buf_putc(&tj, ']');
        dec_type *t = NULL;
        dec_error err = DEC_ERROR_INIT;
        int rc = dec_type_parse(tj.data, tj.len, NULL, &t, &err);
        if (levels < 256) {
            CHECK_INT_EQ(rc, 0);
            msgpack_sbuffer sb;
            msgpack_sbuffer_init(&sb);
            msgpack_packer pk;
            msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
            for (int i = 0; i < levels; i++)
                msgpack_pack_array(&pk, 1);
            msgpack_pack_true(&pk);
            const char *got = decode(t, &sb, NULL);
            CHECK(strstr(got, "[true]") != NULL);
            msgpack_sbuffer_destroy(&sb);
        } else {
            CHECK_INT_EQ(rc, TFTAP_ELIMIT);
        }
        dec_error_done(&err);
        dec_type_free(t);
        tftap_buf_done(&tj);
    }
}

static void test_type_json(void)
{
    dec_type *t = type_of(" [\"object\", {\"z\": [\"set\", \"number\"], \"a\": [\"tuple\", "
                          "[\"bool\", \"dynamic\"]], \"m\": [\"map\", \"string\"]}, [\"z\"]] ");
    tftap_buf out = TFTAP_BUF_INIT;
    dec_type_to_json(t, &out);
    CHECK_STR_EQ(tftap_buf_cstr(&out), "[\"object\",{\"a\":[\"tuple\",[\"bool\",\"dynamic\"]],"
                                       "\"m\":[\"map\",\"string\"],\"z\":[\"set\",\"number\"]},"
                                       "[\"z\"]]");
    tftap_buf_done(&out);
    dec_type_free(t);

    const char *bad[] = {"",
                         "\"strin\"",
                         "[\"list\"]",
                         "[\"list\",\"string\",1]",
                         "[\"object\",{\"a\":\"string\"},[\"b\"]]",
                         "[\"tuple\",{}]",
                         "42",
                         "\"string\" x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dec_error err = DEC_ERROR_INIT;
        dec_type *bt = NULL;
        CHECK_INT_EQ(dec_type_parse(bad[i], strlen(bad[i]), NULL, &bt, &err), TFTAP_EDECODE);
        CHECK(bt == NULL);
        CHECK(err.reason != NULL);
        dec_error_done(&err);
    }
}

static void test_numbers(void)
{
    struct {
        double v;
        const char *want;
    } cases[] = {{0.1, "0.1"},
                 {1.0 / 3, "0.3333333333333333"},
                 {-2.5e-310, "-2.5e-310"},
                 {1e21, "1e+21"},
                 {123456.0, "123456"},
                 {-0.0, "-0"},
                 {9007199254740993.0, "9007199254740992"},
                 {5e-324, "5e-324"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tftap_buf out = TFTAP_BUF_INIT;
        CHECK_INT_EQ(dec_number_float(cases[i].v, &out), 0);
        CHECK_STR_EQ(tftap_buf_cstr(&out), cases[i].want);
        tftap_buf_done(&out);
    }
    const char *bad[] = {"", "-", ".", "e5", "1e", "1e+", "0x10", "1_000", "NaN", "1.2.3", " 1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tftap_buf out = TFTAP_BUF_INIT;
        CHECK_INT_EQ(dec_number_decimal(bad[i], strlen(bad[i]), &out), TFTAP_EDECODE);
        tftap_buf_done(&out);
    }
}

static void test_utf8(void)
{
    CHECK(dec_utf8_valid("plain ascii text, longer than eight bytes", 41));
    CHECK(dec_utf8_valid("\xf4\x8f\xbf\xbf", 4));   /* U+10FFFF */
    CHECK(!dec_utf8_valid("\xf4\x90\x80\x80", 4));  /* above U+10FFFF */
    CHECK(!dec_utf8_valid("\xe0\x80\xaf", 3));      /* overlong */
    CHECK(!dec_utf8_valid("abcdefgh\xe2\x82", 10)); /* truncated after the fast path */
    CHECK(dec_utf8_valid("", 0));
}

static void test_pretty(void)
{
    const char *in = "{\"a\":[1,{\"b\":\"x,y:[z]\"}],\"e\":{},\"l\":[]}";
    tftap_buf out = TFTAP_BUF_INIT;
    tftap_json_pretty(in, strlen(in), &out);
    CHECK_STR_EQ(tftap_buf_cstr(&out), "{\n  \"a\": [\n    1,\n    {\n      \"b\": \"x,y:[z]\"\n"
                                       "    }\n  ],\n  \"e\": {},\n  \"l\": []\n}");
    tftap_buf_done(&out);
}

int main(void)
{
    test_redaction();
    test_error_restores_buffer();
    test_big_object();
    test_default_depth();
    test_type_json();
    test_numbers();
    test_utf8();
    test_pretty();
    return check_report("test_values");
}
