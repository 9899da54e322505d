/* The decoder's inverse (replay): decode -> encode -> decode must give the
 * same JSON for every golden value and every golden message, the encoding of
 * a payload go-cty (or Go's protobuf) wrote must be byte-equal to it, and
 * input that does not fit the type fails naming the JSON path. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/decoder.h"
#include "decoder/decoder_int.h"
#include "tests/check.h"

static const char *srcdir(void)
{
    const char *d = getenv("top_srcdir");
    return d ? d : ".";
}

static char *read_file(const char *dir, const char *name, const char *ext, size_t *len)
{
    tftap_buf path = TFTAP_BUF_INIT, b = TFTAP_BUF_INIT;
    tftap_buf_printf(&path, "%s/%s%s", dir, name, ext);
    int rc = tftap_read_file(tftap_buf_cstr(&path), (size_t)16 << 20, &b);
    tftap_buf_done(&path);
    if (rc) {
        tftap_buf_done(&b);
        return NULL;
    }
    tftap_buf_putc(&b, '\0'); /* a NUL after the bytes, not counted */
    b.len--;
    return tftap_buf_take(&b, len);
}

static void hexdump(const char *label, const char *p, size_t n)
{
    fprintf(stderr, "  %s:", label);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, " %02x", (unsigned char)p[i]);
    fputc('\n', stderr);
}

/* ---- values ------------------------------------------------------------------ */

static char *to_json(const dec_type *t, const char *mp, size_t n)
{
    tftap_buf out = TFTAP_BUF_INIT;
    dec_error err = DEC_ERROR_INIT;
    int rc = dec_msgpack_to_json(t, mp, n, NULL, &out, &err);
    if (rc)
        fprintf(stderr, "  decode: %s: %s\n", err.path, err.reason);
    dec_error_done(&err);
    if (rc) {
        tftap_buf_done(&out);
        return NULL;
    }
    tftap_buf_cstr(&out);
    return tftap_buf_take(&out, NULL);
}

static char *sorted(const char *json)
{
    sj_doc *d = NULL;
    tftap_buf out = TFTAP_BUF_INIT;
    if (!json || sj_parse(json, strlen(json), 0, &d) || sj_write_sorted(sj_root(d), &out)) {
        sj_free(d);
        tftap_buf_done(&out);
        return NULL;
    }
    sj_free(d);
    tftap_buf_cstr(&out);
    return tftap_buf_take(&out, NULL);
}

/* Wire forms go-cty never writes (it writes the shortest form of each): the
 * decoder accepts them, the encoder writes the canonical one instead. */
static const char *const non_canonical[] = {
    "mp_dynamic_type_as_str",             /* type JSON as str, go-cty writes bin */
    "mp_dynamic_object",                  /* type JSON attributes unsorted */
    "mp_number_uint64_max",               /* uint64: go-cty writes the decimal text */
    "mp_refined_number_bound_decimal",    /* "0.5" text: go-cty writes a float64 */
    "mp_list_array16",                    /* array16 for a short list */
    "mp_list_array32",                    /* array32 */
    "mp_map16",                           /* map16 for a short map */
    "mp_map32",                           /* map32 */
    "mp_number_float32",                  /* float32 */
    "mp_number_float32_inexact",          /* float32 */
    "mp_number_float64_integral",         /* an integral float64: go-cty writes an int */
    "mp_number_int16",                    /* a small value in a wide int */
    "mp_number_int32",                    /* a small value in a wide int */
    "mp_number_int8",                     /* a small value in a wide int */
    "mp_number_uint16",                   /* a small value in a wide int */
    "mp_number_uint32",                   /* a small value in a wide int */
    "mp_number_uint8",                    /* a small value in a wide int */
    "mp_number_string_decimal",           /* a decimal that is an exact float64 */
    "mp_number_string_exponent_8_digits", /* exponent text */
    "mp_number_string_inf",               /* "Inf" text: go-cty writes a float64 */
    "mp_number_string_leading_dot",       /* ".5": normalised text */
    "mp_number_string_leading_zeros",     /* "007": normalised text */
    "mp_number_string_plus",              /* "+5": normalised text */
    "mp_number_string_tiny",              /* exponent text */
    "mp_number_string_trailing_dot",      /* "5.": normalised text */
    "mp_refined_dynamic_ignored",         /* refinements the decoder does not show */
    "mp_refined_trailing_bytes_allowed",  /* bytes after the refinement map */
    "mp_refined_unknown_key_ignored",     /* a refinement key from the future */
    "mp_string_bin8",                     /* bin for a string */
    "mp_string_str16",                    /* str16 for a short string */
    "mp_string_str32",                    /* str32 */
    "mp_unknown_code12_one_byte",         /* other unknown extensions: go-cty writes ext 0 */
    "mp_unknown_negative_code",
    "mp_unknown_other_code_ext8",
    "mp_unknown_other_code_fixext2",
    NULL,
};

static int is_non_canonical(const char *name)
{
    for (size_t i = 0; non_canonical[i]; i++)
        if (strcmp(non_canonical[i], name) == 0)
            return 1;
    return 0;
}

/* One golden case: its input decodes to J1; J1 encodes to msgpack M; M
 * decodes to J1 again; M is the input's own bytes where go-cty wrote them. */
static int golden_case(const char *dir, const char *name, int *byte_equal)
{
    size_t tn, in_n;
    char *tj = read_file(dir, name, ".type", &tn);
    int is_mp = 1;
    char *in = read_file(dir, name, ".msgpack", &in_n);
    if (!in) {
        is_mp = 0;
        in = read_file(dir, name, ".json", &in_n);
    }
    dec_type *t = NULL;
    dec_error err = DEC_ERROR_INIT;
    char *j1 = NULL, *j2 = NULL;
    tftap_buf mp = TFTAP_BUF_INIT, jb = TFTAP_BUF_INIT;
    int ok = 0;
    if (!tj || !in || dec_type_parse(tj, tn, NULL, &t, &err)) {
        fprintf(stderr, "%s: cannot read the case\n", name);
        goto out;
    }
    if (is_mp) {
        j1 = to_json(t, in, in_n);
    } else if (dec_json_to_json(t, in, in_n, NULL, &jb, &err) == 0) {
        tftap_buf_cstr(&jb);
        j1 = tftap_buf_take(&jb, NULL);
    }
    if (!j1) {
        fprintf(stderr, "%s: does not decode\n", name);
        goto out;
    }
    if (dec_json_value_to_msgpack(t, j1, strlen(j1), NULL, &mp, &err)) {
        fprintf(stderr, "%s: encode failed at %s: %s\n", name, err.path, err.reason);
        goto out;
    }
    j2 = to_json(t, mp.data, mp.len);
    /* JSON input may list attributes in any order; msgpack has go-cty's. */
    if (!is_mp && j2) {
        char *s1 = sorted(j1), *s2 = sorted(j2);
        free(j1);
        free(j2);
        j1 = s1;
        j2 = s2;
    }
    if (!j1 || !j2 || strcmp(j1, j2) != 0) {
        fprintf(stderr, "%s: round trip differs\n  first:  %s\n  second: %s\n", name,
                j1 ? j1 : "(error)", j2 ? j2 : "(error)");
        goto out;
    }
    *byte_equal = is_mp && mp.len == in_n && memcmp(mp.data, in, in_n) == 0;
    if (is_mp && !*byte_equal && !is_non_canonical(name)) {
        fprintf(stderr, "%s: bytes differ from go-cty's\n", name);
        hexdump("original", in, in_n);
        hexdump("encoded ", mp.data, mp.len);
        goto out;
    }
    ok = 1;
out:
    dec_error_done(&err);
    dec_type_free(t);
    free(tj);
    free(in);
    free(j1);
    free(j2);
    tftap_buf_done(&mp);
    tftap_buf_done(&jb);
    return ok;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names (without ext) of the files in dir that start with prefix. */
static size_t list_cases(const char *dir, const char *prefix, const char *ext, char ***out)
{
    DIR *d = opendir(dir);
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        size_t l = strlen(de->d_name), el = strlen(ext);
        if (strncmp(de->d_name, prefix, strlen(prefix)) != 0 || l < el ||
            strcmp(de->d_name + l - el, ext) != 0)
            continue;
        char **grown = realloc(names, (n + 1) * sizeof *names);
        if (!grown)
            break;
        names = grown;
        names[n++] = strndup(de->d_name, l - el);
    }
    if (d)
        closedir(d);
    if (n)
        qsort(names, n, sizeof *names, name_cmp);
    *out = names;
    return n;
}

static void test_golden_values(void)
{
    tftap_buf dir = TFTAP_BUF_INIT;
    tftap_buf_printf(&dir, "%s/tests/decoder/golden", srcdir());
    const char *prefixes[] = {"mp_", "js_"};
    size_t cases = 0, equal = 0;
    for (size_t p = 0; p < 2; p++) {
        char **names;
        size_t n = list_cases(tftap_buf_cstr(&dir), prefixes[p], ".type", &names);
        for (size_t i = 0; i < n; i++) {
            int be = 0;
            CHECK(golden_case(tftap_buf_cstr(&dir), names[i], &be));
            cases++;
            equal += (size_t)be;
            free(names[i]);
        }
        free(names);
    }
    printf("golden values: %zu cases round-trip, %zu byte-equal\n", cases, equal);
    CHECK(cases > 100);
    CHECK(equal > 60);
    tftap_buf_done(&dir);
}

/* ---- single values ------------------------------------------------------------- */

static dec_type *type(const char *json)
{
    dec_type *t = NULL;
    dec_error err = DEC_ERROR_INIT;
    CHECK_INT_EQ(dec_type_parse(json, strlen(json), NULL, &t, &err), 0);
    dec_error_done(&err);
    return t;
}

/* The msgpack of a value as hex, or "error <path>: <reason>". */
static const char *enc(const char *type_json, const char *value)
{
    static tftap_buf res;
    tftap_buf out = TFTAP_BUF_INIT;
    dec_error err = DEC_ERROR_INIT;
    dec_type *t = type(type_json);
    tftap_buf_reset(&res);
    tftap_buf_puts(&out, "<");
    int rc = t ? dec_json_value_to_msgpack(t, value, strlen(value), NULL, &out, &err) : -99;
    if (rc) {
        CHECK_INT_EQ(out.len, 1); /* restored on failure */
        tftap_buf_printf(&res, "error %s: %s", err.path && err.path[0] ? err.path : ".",
                         err.reason ? err.reason : "?");
    } else {
        for (size_t i = 1; i < out.len; i++)
            tftap_buf_printf(&res, "%02x", (unsigned char)out.data[i]);
    }
    dec_error_done(&err);
    dec_type_free(t);
    tftap_buf_done(&out);
    return tftap_buf_cstr(&res);
}

static void test_values(void)
{
    /* numbers: go-cty's choice of int, float64 or decimal string */
    CHECK_STR_EQ(enc("\"number\"", "0"), "00");
    CHECK_STR_EQ(enc("\"number\"", "-0"), "cb8000000000000000"); /* only a float64 shows -0 */
    CHECK_STR_EQ(enc("\"number\"", "127"), "7f");
    CHECK_STR_EQ(enc("\"number\"", "128"), "cc80");
    CHECK_STR_EQ(enc("\"number\"", "-33"), "d0df");
    CHECK_STR_EQ(enc("\"number\"", "1e3"), "a3316533"); /* text go-cty never writes: kept */
    CHECK_STR_EQ(enc("\"number\"", "2.5"), "cb4004000000000000");
    CHECK_STR_EQ(enc("\"number\"", "2.50"), "a4322e3530");
    CHECK_STR_EQ(enc("\"number\"", "-9223372036854775808"), "d38000000000000000");
    /* beyond int64, not a float64: the exact decimal text */
    CHECK_STR_EQ(enc("\"number\"", "18446744073709551615"),
                 "b43138343436373434303733373039353531363135");
    CHECK_STR_EQ(enc("\"number\"", "0.1"), "cb3fb999999999999a");
    CHECK_STR_EQ(enc("\"number\"", "0.10"), "a4302e3130");
    CHECK_STR_EQ(enc("\"number\"", "1.8446744073709552e+19"), "cb43f0000000000000");
    CHECK_STR_EQ(enc("\"number\"", "18446744073709551616"),
                 "b43138343436373434303733373039353531363136");
    CHECK_STR_EQ(enc("\"number\"", "\"Infinity\""), "cb7ff0000000000000");
    CHECK_STR_EQ(enc("\"number\"", "\"-Infinity\""), "cbfff0000000000000");
    CHECK_STR_EQ(enc("\"number\"", "\"12\""), "error .: number is required");
    /* strings, collections, objects in name order with missing as null */
    CHECK_STR_EQ(enc("\"string\"", "\"h\\u00e9\""), "a368c3a9");
    CHECK_STR_EQ(enc("[\"list\",\"bool\"]", "[true,false,null]"), "93c3c2c0");
    CHECK_STR_EQ(enc("[\"map\",\"string\"]", "{\"b\":\"x\",\"a\":\"y\"}"), "82a162a178a161a179");
    CHECK_STR_EQ(enc("[\"object\",{\"b\":\"number\",\"a\":\"string\"}]", "{\"b\":1}"),
                 "82a161c0a16201");
    CHECK_STR_EQ(enc("[\"tuple\",[\"string\",\"number\"]]", "[\"a\",2]"), "92a16102");
    /* unknowns: extension 0, or 12 with go-cty's refinement keys in order */
    CHECK_STR_EQ(enc("\"string\"", "{\"$unknown\":{}}"), "d40000");
    CHECK_STR_EQ(enc("\"string\"", "{\"$unknown\":{\"prefix\":\"ami-\",\"null\":false}}"),
                 "c7090c8201c202a4616d692d");
    CHECK_STR_EQ(enc("\"number\"", "{\"$unknown\":{\"lower\":[0,true],\"upper\":[1.5,false]}}"),
                 "c7110c82039200c30492cb3ff8000000000000c2");
    CHECK_STR_EQ(enc("[\"list\",\"string\"]", "{\"$unknown\":{\"min_len\":1,\"max_len\":300}}"),
                 "c7070c82050106cd012c");
    /* dynamic: [type JSON bytes, value] */
    CHECK_STR_EQ(enc("\"dynamic\"", "{\"type\":[\"list\",\"string\"],\"value\":[\"a\"]}"),
                 "92c4115b226c697374222c22737472696e67225d91a161");
    CHECK_STR_EQ(enc("\"dynamic\"", "{\"$unknown\":{}}"), "d40000");
    CHECK_STR_EQ(enc("\"dynamic\"", "null"), "c0");
    /* redacted values become a value of the right type */
    CHECK_STR_EQ(enc("\"string\"", "{\"$sensitive\":\"hmac-sha256:ab\"}"),
                 "ae686d61632d7368613235363a6162");
    CHECK_STR_EQ(enc("\"number\"", "{\"$sensitive\":\"hmac-sha256:ab\"}"), "00");
    CHECK_STR_EQ(enc("\"bool\"", "{\"$sensitive\":\"x\"}"), "c2");
    CHECK_STR_EQ(enc("[\"set\",\"string\"]", "{\"$sensitive\":\"x\"}"), "90");
    CHECK_STR_EQ(enc("[\"object\",{\"a\":\"string\"}]", "{\"$sensitive\":\"x\"}"), "81a161c0");
    /* errors name the JSON path */
    CHECK_STR_EQ(enc("[\"object\",{\"tags\":[\"map\",\"number\"]}]", "{\"tags\":{\"x\":true}}"),
                 "error .tags[\"x\"]: number is required");
    CHECK_STR_EQ(enc("[\"list\",[\"object\",{\"a\":\"string\"}]]", "[{\"a\":\"x\"},{\"b\":1}]"),
                 "error .[1].b: unsupported attribute");
    CHECK_STR_EQ(enc("[\"tuple\",[\"string\"]]", "[\"a\",\"b\"]"),
                 "error .: a tuple of length 1 is required (2 given)");
    CHECK_STR_EQ(enc("[\"map\",\"string\"]", "{\"a\":\"x\",\"a\":\"y\"}"),
                 "error .[\"a\"]: duplicate map key");
    CHECK_STR_EQ(enc("\"string\"", "{\"$unknown\":{\"lower\":[0,true]}}"),
                 "error .: bad unknown value refinement: number bound for a non-number type");
    CHECK_STR_EQ(enc("\"dynamic\"", "{\"type\":\"nope\",\"value\":1}"),
                 "error .: dynamic value type: invalid type: unknown primitive type");
    CHECK_STR_EQ(enc("\"string\"", "\"a\" x"), "error .: invalid JSON");
}

/* ---- messages ---------------------------------------------------------------- */

/* The schema test_message renders its messages (the fuzz corpus seeds) with. */
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
    "\"functions\":{\"echo\":{\"description\":\"\",\"summary\":\"\","
    "\"return_type\":[\"list\",\"string\"],"
    "\"parameters\":[{\"name\":\"s\",\"description\":\"\",\"type\":\"string\"}],"
    "\"variadic_parameter\":{\"name\":\"rest\",\"description\":\"\",\"type\":\"number\"}}},"
    "\"resource_identity_schemas\":{\"test_thing\":{\"version\":0,\"attributes\":{"
    "\"id\":{\"type\":\"string\",\"required_for_import\":true}}}}}}}";

static dec_schema *schema;

/* A stand-in for the store's keyed HMAC. */
static void fake_redact(void *ctx, const char *json, size_t len, char out[65])
{
    (void)ctx;
    tftap_sha256_hex(json, len, out);
}

/* The type name a recorded request would have given a response. */
static const char *response_type(const char *method)
{
    if (strstr(method, "CallFunction"))
        return "echo";
    if (strstr(method, "EphemeralResource"))
        return "test_eph";
    if (strstr(method, "DataSource"))
        return "test_ds";
    return "test_thing";
}

static char *render(const char *method, int is_response, const void *p, size_t n,
                    const char *type_name, int redact)
{
    dec_opts opts = {.redact = redact ? fake_redact : NULL};
    tftap_buf out = TFTAP_BUF_INIT;
    dec_error err = DEC_ERROR_INIT;
    int rc = dec_message_to_json(method, is_response, p, n, schema, type_name, &opts, &out, &err);
    dec_error_done(&err);
    if (rc) {
        tftap_buf_done(&out);
        return NULL;
    }
    tftap_buf_cstr(&out);
    return tftap_buf_take(&out, NULL);
}

#define SHA256_EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static int is_private(const char *key)
{
    size_t n = key ? strlen(key) : 0;
    return n && (strcmp(key, "private") == 0 || (n > 8 && strcmp(key + n - 8, "_private") == 0));
}

/* The JSON replay can give back for a rendered message: what the rendering
 * reduced (docs/replay.md) as replay sends it, and redaction hashes blanked
 * (a redacted value comes back as a stand-in, whose hash differs; the book
 * compares sensitive values equal whatever their hash). */
static void write_reduced(const sj_node *n, const char *key, tftap_buf *o)
{
    if (n->kind == SJ_OBJECT && (sj_get(n, "$undecoded") || sj_get(n, "$error"))) {
        tftap_buf_puts(o, "null");
    } else if (sj_is_sensitive(n)) {
        tftap_buf_puts(o, "{\"$sensitive\":\"\"}");
    } else if (n->kind == SJ_OBJECT && is_private(key) && sj_get(n, "size")) {
        tftap_buf_puts(o, "{\"size\":0,\"sha256\":\"" SHA256_EMPTY "\"}");
    } else if (n->kind == SJ_OBJECT || n->kind == SJ_ARRAY) {
        int first = 1;
        tftap_buf_putc(o, n->kind == SJ_OBJECT ? '{' : '[');
        for (const sj_node *c = n->child; c; c = c->next) {
            if (n->kind == SJ_OBJECT && strcmp(c->key, "$unknown_fields") == 0)
                continue;
            if (!first)
                tftap_buf_putc(o, ',');
            first = 0;
            if (n->kind == SJ_OBJECT) {
                tftap_buf_json_string(o, c->key, c->key_len);
                tftap_buf_putc(o, ':');
            }
            write_reduced(c, n->kind == SJ_OBJECT ? c->key : NULL, o);
        }
        tftap_buf_putc(o, n->kind == SJ_OBJECT ? '}' : ']');
    } else {
        sj_write(n, o);
    }
}

static char *reduced(char *json)
{
    sj_doc *d = NULL;
    tftap_buf out = TFTAP_BUF_INIT;
    if (json && sj_parse(json, strlen(json), 0, &d) == 0)
        write_reduced(sj_root(d), NULL, &out);
    sj_free(d);
    free(json);
    tftap_buf_cstr(&out);
    return tftap_buf_take(&out, NULL);
}

/* Messages whose bytes cannot come back as they were, and why. */
static const char *const message_non_canonical[] = {
    "message-020", /* RawState JSON with spaces: rendered compact */
    "message-021", /* RawState bytes that are not JSON: sent back as text, renders the same */
    "message-025", /* an absent DynamicValue comes back as msgpack nil (both render null) */
    "message-029", /* a string that is not UTF-8: rendered with U+FFFD */
    NULL,
};

/* With TFTAP_SEED_DIR set, every message JSON encoded here is also written
 * as a seed for tests/fuzz/fuzz_encode (selector line, direction, JSON). */
static void write_seed(const char *method, int is_response, const char *json)
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
    fprintf(f, "%s\n%c%s", method, is_response ? 's' : 'q', json);
    fclose(f);
}

/* decode -> encode -> decode, with and without redaction. Returns 1 if the
 * JSON came back identical; *byte_equal when the bytes did too. */
static int message_round_trip(const char *name, const char *method, int is_response,
                              const uint8_t *p, size_t n, int redact, int *byte_equal)
{
    char *req_type = NULL;
    if (!is_response && dec_request_type_name(method, p, n, &req_type) != 0)
        req_type = NULL;
    const char *tn = is_response ? response_type(method) : req_type;
    char *j1 = render(method, is_response, p, n, tn, redact), *j2 = NULL;
    tftap_buf pb = TFTAP_BUF_INIT;
    dec_error err = DEC_ERROR_INIT;
    int ok = 0;
    *byte_equal = 0;
    if (!j1) {
        ok = -1; /* the decoder refuses it: nothing to invert */
        goto out;
    }
    if (!redact)
        write_seed(method, is_response, j1);
    if (dec_message_from_json(method, is_response, tn, j1, strlen(j1), schema, NULL, &pb, &err)) {
        fprintf(stderr, "%s: encode failed at %s: %s\n  json: %s\n", name, err.path, err.reason,
                j1);
        goto out;
    }
    j2 = render(method, is_response, pb.data ? pb.data : "", pb.len, tn, redact);
    j1 = reduced(j1);
    j2 = reduced(j2);
    if (!j2 || strcmp(j1, j2) != 0) {
        fprintf(stderr, "%s%s: round trip differs\n  first:  %s\n  second: %s\n", name,
                redact ? " (redacted)" : "", j1, j2 ? j2 : "(error)");
        goto out;
    }
    *byte_equal = pb.len == n && (n == 0 || memcmp(pb.data, p, n) == 0);
    if (!*byte_equal && getenv("TEST_ENCODE_VERBOSE")) {
        hexdump("original", (const char *)p, n);
        hexdump("encoded ", pb.data, pb.len);
    }
    ok = 1;
out:
    free(req_type);
    free(j1);
    free(j2);
    tftap_buf_done(&pb);
    dec_error_done(&err);
    return ok;
}

static void test_golden_messages(void)
{
    tftap_buf dir = TFTAP_BUF_INIT;
    tftap_buf_printf(&dir, "%s/tests/fuzz/corpus/fuzz_message", srcdir());
    char **names;
    size_t n = list_cases(tftap_buf_cstr(&dir), "message-", "", &names);
    size_t done = 0, equal = 0, refused = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        char *data = read_file(tftap_buf_cstr(&dir), names[i], "", &len);
        char *nl = data ? memchr(data, '\n', len) : NULL;
        if (!nl || (size_t)(nl - data) + 2 > len) {
            CHECK(0);
            free(data);
            free(names[i]);
            continue;
        }
        *nl = '\0';
        int is_response = nl[1] == 's';
        const uint8_t *p = (const uint8_t *)nl + 2;
        size_t pn = len - (size_t)(nl - data) - 2;
        int be = 0, be_redacted = 0;
        int ok = message_round_trip(names[i], data, is_response, p, pn, 0, &be);
        if (ok == -1) {
            refused++;
        } else {
            CHECK_INT_EQ(ok, 1);
            CHECK_INT_EQ(message_round_trip(names[i], data, is_response, p, pn, 1, &be_redacted),
                         1);
            /* Without redaction only the reduced forms (and the wire forms
             * listed) keep the bytes from coming back as they were. */
            char *j = render(data, is_response, p, pn, is_response ? response_type(data) : NULL, 0);
            int reduced_form =
                j &&
                (strstr(j, "_private\":{\"size\":") || strstr(j, "\"private\":{\"size\":") ||
                 strstr(j, "$unknown_fields") || strstr(j, "$undecoded") || strstr(j, "$error"));
            int listed = 0;
            for (size_t k = 0; message_non_canonical[k]; k++)
                listed |= strcmp(message_non_canonical[k], names[i]) == 0;
            if (!reduced_form && !listed && !be)
                fprintf(stderr, "%s: bytes differ (%s)\n", names[i], data);
            CHECK(reduced_form || listed || be);
            free(j);
            done++;
            equal += (size_t)be;
        }
        free(data);
        free(names[i]);
    }
    free(names);
    printf("golden messages: %zu round-trip (%zu byte-equal), %zu refused by the decoder\n", done,
           equal, refused);
    CHECK(done >= 20);
    tftap_buf_done(&dir);
}

/* A message JSON encoded then rendered again (no redaction), or the error. */
static const char *msg(const char *method, int is_response, const char *type_name, const char *json)
{
    static tftap_buf res;
    tftap_buf pb = TFTAP_BUF_INIT;
    dec_error err = DEC_ERROR_INIT;
    tftap_buf_reset(&res);
    tftap_buf_puts(&pb, "<");
    int rc = dec_message_from_json(method, is_response, type_name, json, strlen(json), schema, NULL,
                                   &pb, &err);
    if (rc) {
        CHECK_INT_EQ(pb.len, 1);
        tftap_buf_printf(&res, "error %d %s: %s", rc, err.path && err.path[0] ? err.path : ".",
                         err.reason ? err.reason : "?");
    } else {
        char *j = render(method, is_response, pb.data + 1, pb.len - 1, type_name, 0);
        tftap_buf_puts(&res, j ? j : "(does not decode)");
        free(j);
    }
    dec_error_done(&err);
    tftap_buf_done(&pb);
    return tftap_buf_cstr(&res);
}

static void test_messages(void)
{
    const char *plan = "/tfplugin6.Provider/PlanResourceChange";
    /* Reduced forms: private bytes as size and hash come back empty, a path
     * given only as text comes back as steps, unknown fields are dropped. */
    CHECK_STR_EQ(
        msg(plan, 1, "test_thing",
            "{\"planned_state\":{\"id\":{\"$unknown\":{}},\"password\":{\"$sensitive\":\"hmac-"
            "sha256:0a\"},\"rule\":[{\"port\":18446744073709551616}],\"tags\":null},"
            "\"requires_replace\":[{\"path\":\".tags[\\\"a b\\\"][-3].x\"}],"
            "\"planned_private\":{\"size\":5,\"sha256\":\"ff\"},\"diagnostics\":[{\"severity\":"
            "\"WARNING\",\"summary\":\"s\"}],\"$unknown_fields\":[{\"field\":99}]}"),
        "{\"planned_state\":{\"id\":{\"$unknown\":{}},\"password\":\"hmac-sha256:0a\","
        "\"rule\":[{\"port\":18446744073709551616}],\"tags\":null},"
        "\"requires_replace\":[{\"path\":\".tags[\\\"a b\\\"][-3].x\",\"steps\":[{"
        "\"attribute_name\":\"tags\"},{\"element_key_string\":\"a b\"},{\"element_key_int\":-3},"
        "{\"attribute_name\":\"x\"}]}],"
        "\"planned_private\":{\"size\":0,\"sha256\":"
        "\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"},"
        "\"diagnostics\":[{\"severity\":\"WARNING\",\"summary\":\"s\",\"detail\":\"\","
        "\"attribute\":null}],\"legacy_type_system\":false,\"deferred\":null,"
        "\"planned_identity\":null}");
}

static void test_message_errors(void)
{
    const char *plan = "/tfplugin6.Provider/PlanResourceChange";
    CHECK_STR_EQ(msg(plan, 0, NULL,
                     "{\"type_name\":\"test_thing\",\"proposed_new_state\":{\"tags\":{\"x\":1}}}"),
                 "error -3 .proposed_new_state.tags[\"x\"]: string is required");
    CHECK_STR_EQ(msg(plan, 0, NULL, "{\"type_name\":\"test_thing\",\"config\":{\"rule\":[{}, 7]}}"),
                 "error -3 .config.rule[1]: an object is required");
    CHECK_STR_EQ(msg(plan, 0, NULL, "{\"type_name\":\"nope\",\"config\":{\"a\":1}}"),
                 "error -3 .config: no schema for this value (type nope)");
    CHECK_STR_EQ(msg(plan, 1, "test_thing", "{\"diagnostics\":[{\"severity\":\"LOUD\"}]}"),
                 "error -3 .diagnostics[0].severity: unknown enum value");
    CHECK_STR_EQ(msg(plan, 1, "test_thing", "{\"nope\":1}"), "error -3 .nope: unknown field");
    CHECK_STR_EQ(msg("/tfplugin6.Provider/UpgradeResourceState", 0, NULL,
                     "{\"version\":9223372036854775808}"),
                 "error -3 .version: integer out of range");
    CHECK_STR_EQ(msg("/tfplugin6.Provider/Nope", 0, NULL, "{}"),
                 "error -6 .: unknown method /tfplugin6.Provider/Nope");
    CHECK_STR_EQ(msg(plan, 1, "test_thing", "[]"), "error -3 .: an object is required");
}

int main(void)
{
    dec_error err = DEC_ERROR_INIT;
    CHECK_INT_EQ(
        dec_schema_from_cli_json(schema_json, sizeof schema_json - 1, NULL, NULL, &schema, &err),
        0);
    dec_error_done(&err);
    test_golden_values();
    test_values();
    test_golden_messages();
    test_messages();
    test_message_errors();
    dec_schema_free(schema);
    return check_report("test_encode");
}
