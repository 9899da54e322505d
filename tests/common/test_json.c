/* common's JSON reader: strict RFC 8259, exact numbers, bounded depth, and
 * the writers that go back to text. */
#include <string.h>

#include "common/common.h"
#include "tests/check.h"

/* sj_parse's verdict, which sj_members (checking without building) must
 * give too. */
static int parse(const char *text, unsigned depth)
{
    sj_doc *d = NULL;
    int rc = sj_parse(text, strlen(text), depth, &d);
    CHECK(rc != 0 || d != NULL);
    sj_free(d);
    const char *key = "a";
    sj_span span = {text, 1};
    CHECK_INT_EQ(sj_members(text, strlen(text), depth, &key, 1, &span), rc);
    if (rc)
        CHECK(span.text == NULL && span.len == 0);
    return rc;
}

/* text -> compact text (sorted members when sorted). */
static void round_trip(const char *text, int sorted, const char *expected)
{
    sj_doc *d = NULL;
    tftap_buf out = TFTAP_BUF_INIT;
    CHECK_INT_EQ(sj_parse(text, strlen(text), 0, &d), 0);
    if (sorted)
        CHECK_INT_EQ(sj_write_sorted(sj_root(d), &out), 0);
    else
        sj_write(sj_root(d), &out);
    CHECK_STR_EQ(tftap_buf_cstr(&out), expected);
    tftap_buf_done(&out);
    sj_free(d);
}

static void test_valid(void)
{
    const char *ok[] = {
        "null",
        " true ",
        "false",
        "0",
        "-0",
        "1.5e-7",
        "12345678901234567890123.25",
        "\"\"",
        "\"\\u00e9\\ud83d\\ude00\\/\\\"\\\\\\b\\f\\n\\r\\t\"",
        "[]",
        "{}",
        "{\"a\":[1,{\"b\":null}],\"a\":2}",
        "\n\t[ 1 , 2 ]\r\n",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int rc = parse(ok[i], 0);
        if (rc)
            fprintf(stderr, "refused valid JSON: %s\n", ok[i]);
        CHECK_INT_EQ(rc, 0);
    }
}

static void test_invalid(void)
{
    const char *bad[] = {
        "",
        " ",
        "nul",
        "tru",
        "01",
        "-",
        "1.",
        ".5",
        "1e",
        "1e+",
        "+1",
        "0x10",
        "1 2",
        "\"abc",
        "\"\\x\"",
        "\"\\u12\"",
        "\"\\ud800\"",
        "\"\\udc00\"",
        "\"\\ud800\\u0041\"",
        "\"a\tb\"",
        "\"\x01\"",
        /* past the eight-byte scan of plain runs */
        "\"abcdefghijklm\x1fnopq\"",
        "\"abcdefghijklmnopqrstuvw",
        "\"abcdefghijklmnopqrstuvw\\",
        "\"abcdefghijklmnopqrstuvw\\\"",
        "[1,]",
        "[1 2]",
        "{\"a\"}",
        "{\"a\":1,}",
        "{a:1}",
        "[",
        "]",
        "{\"a\":1}}",
        "[1]x",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = parse(bad[i], 0);
        if (rc != TFTAP_EDECODE)
            fprintf(stderr, "accepted or misjudged invalid JSON: %s\n", bad[i]);
        CHECK_INT_EQ(rc, TFTAP_EDECODE);
    }
}

static void test_depth(void)
{
    CHECK_INT_EQ(parse("[[[1]]]", 3), 0);
    CHECK_INT_EQ(parse("[[[[1]]]]", 3), TFTAP_ELIMIT);
    CHECK_INT_EQ(parse("{\"a\":{\"b\":{\"c\":{}}}}", 3), TFTAP_ELIMIT);
    /* The default bound holds too, without recursion running away. */
    char deep[4 * TFTAP_JSON_MAX_DEPTH];
    size_t n = 0;
    for (size_t i = 0; i < TFTAP_JSON_MAX_DEPTH + 1; i++)
        deep[n++] = '[';
    deep[n] = '\0';
    CHECK_INT_EQ(parse(deep, 0), TFTAP_ELIMIT);
}

static void test_values(void)
{
    sj_doc *d = NULL;
    const char *text = "{\"n\":12345678901234567890.5,\"s\":\"a\\u0000b\",\"t\":true}";
    CHECK_INT_EQ(sj_parse(text, strlen(text), 0, &d), 0);
    const sj_node *n = sj_get(sj_root(d), "n");
    CHECK(n && n->kind == SJ_NUMBER);
    CHECK_STR_EQ(n ? n->str : NULL, "12345678901234567890.5"); /* the text, not a double */
    const sj_node *s = sj_get(sj_root(d), "s");
    CHECK(s && s->kind == SJ_STRING && s->len == 3 && memcmp(s->str, "a\0b", 3) == 0);
    const sj_node *t = sj_get(sj_root(d), "t");
    CHECK(t && t->kind == SJ_BOOL && t->boolean);
    CHECK(sj_get(sj_root(d), "missing") == NULL);
    CHECK(sj_get(n, "x") == NULL); /* not an object */
    sj_free(d);

    /* Long strings: plain ones are copied whole, escaped ones unescaped. */
    text = "[\"abcdefghijklmnopqrstuvwxyz\",\"abcdefghij\\\"klmnopq\\\\rstuvwxyz\\n\"]";
    CHECK_INT_EQ(sj_parse(text, strlen(text), 0, &d), 0);
    const sj_node *plain = sj_at(sj_root(d), 0), *esc = sj_at(sj_root(d), 1);
    CHECK_STR_EQ(plain ? plain->str : NULL, "abcdefghijklmnopqrstuvwxyz");
    CHECK(plain && plain->len == 26);
    CHECK_STR_EQ(esc ? esc->str : NULL, "abcdefghij\"klmnopq\\rstuvwxyz\n");
    sj_free(d);

    round_trip("{ \"b\" : [1, 2.50], \"a\" : \"\\u00e9\" }", 0,
               "{\"b\":[1,2.50],\"a\":\"\u00e9\"}");
    round_trip("{\"b\":{\"d\":1,\"c\":2},\"a\":null}", 1, "{\"a\":null,\"b\":{\"c\":2,\"d\":1}}");
}

static int equal(const char *x, const char *y)
{
    sj_doc *a = NULL, *b = NULL;
    CHECK_INT_EQ(sj_parse(x, strlen(x), 0, &a), 0);
    CHECK_INT_EQ(sj_parse(y, strlen(y), 0, &b), 0);
    int eq = sj_equal(sj_root(a), sj_root(b));
    sj_free(a);
    sj_free(b);
    return eq;
}

static void test_at(void)
{
    sj_doc *d = NULL;
    const char *text = "{\"a\":[\"x\",2,[3]],\"o\":{\"k\":1}}";
    CHECK_INT_EQ(sj_parse(text, strlen(text), 0, &d), 0);
    const sj_node *a = sj_get(sj_root(d), "a");
    const sj_node *e = sj_at(a, 0);
    CHECK(e && e->kind == SJ_STRING && e->len == 1 && e->str[0] == 'x');
    e = sj_at(a, 2);
    CHECK(e && e->kind == SJ_ARRAY);
    CHECK(sj_at(a, 3) == NULL);                       /* past the end */
    CHECK(sj_at(sj_get(sj_root(d), "o"), 0) == NULL); /* not an array */
    CHECK(sj_at(NULL, 0) == NULL);
    sj_free(d);
}

static void test_equal(void)
{
    CHECK(equal("{\"a\":1,\"b\":[1,2]}", "{\"b\":[1,2],\"a\":1.0}"));
    CHECK(!equal("{\"a\":1,\"b\":[1,2]}", "{\"b\":[2,1],\"a\":1}"));
    /* Numbers by value, integers exactly (a double cannot tell these). */
    CHECK(!equal("9007199254740993", "9007199254740992"));
    CHECK(!equal("-18446744073709551615", "18446744073709551615"));
    CHECK(equal("-0", "0"));
    CHECK(equal("1", "1.0"));
    CHECK(equal("1e2", "100"));
    /* A key given twice: its k-th member against the other's k-th. */
    CHECK(equal("{\"k\":1,\"x\":0,\"k\":2}", "{\"x\":0,\"k\":1,\"k\":2}"));
    CHECK(!equal("{\"k\":1,\"x\":0,\"k\":2}", "{\"x\":0,\"k\":2,\"k\":1}"));
    CHECK(!equal("{\"k\":1,\"k\":1}", "{\"k\":1,\"j\":1}"));
    /* Large objects (sorted, not searched) agree with small ones. */
    tftap_buf x = TFTAP_BUF_INIT, y = TFTAP_BUF_INIT, z = TFTAP_BUF_INIT;
    tftap_buf_putc(&x, '{');
    tftap_buf_putc(&y, '{');
    tftap_buf_putc(&z, '{');
    for (int i = 0; i < 40; i++) {
        tftap_buf_printf(&x, "%s\"m%d\":%d", i ? "," : "", i, i);
        tftap_buf_printf(&y, "%s\"m%d\":%d", i ? "," : "", 39 - i, 39 - i);
        tftap_buf_printf(&z, "%s\"m%d\":%d", i ? "," : "", 39 - i, i == 20 ? 0 : 39 - i);
    }
    tftap_buf_putc(&x, '}');
    tftap_buf_putc(&y, '}');
    tftap_buf_putc(&z, '}');
    CHECK(equal(tftap_buf_cstr(&x), tftap_buf_cstr(&y)));
    CHECK(!equal(tftap_buf_cstr(&x), tftap_buf_cstr(&z)));
    tftap_buf_done(&x);
    tftap_buf_done(&y);
    tftap_buf_done(&z);
    /* Sorted writing keeps a duplicate key's members in document order. */
    round_trip("{\"b\":0,\"a\":2,\"a\":1}", 1, "{\"a\":2,\"a\":1,\"b\":0}");
}

/* The text of member key of text by sj_members, "-" if absent. */
static void member(const char *text, const char *key, const char *expected)
{
    const char *keys[] = {"other", key};
    sj_span m[2];
    CHECK_INT_EQ(sj_members(text, strlen(text), 0, keys, 2, m), 0);
    char got[256] = "-";
    if (m[1].text) {
        CHECK(m[1].text >= text && m[1].text + m[1].len <= text + strlen(text));
        CHECK(m[1].len < sizeof got);
        memcpy(got, m[1].text, m[1].len);
        got[m[1].len] = '\0';
    }
    CHECK_STR_EQ(got, expected);
}

static void test_members(void)
{
    member("{\"a\":1,\"b\":[1,{\"a\":2}]}", "b", "[1,{\"a\":2}]");
    member("{\"a\":1,\"b\":[1,{\"c\":2}]}", "c", "-"); /* top-level members only */
    member(" { \"k\" :\t\"v\\\"w\" , \"z\": null } ", "k", "\"v\\\"w\"");
    member("{\"z\":null}", "z", "null");
    member("{\"k\":1,\"k\":2}", "k", "1");     /* the first, as sj_get */
    member("{\"\\u006b\":true}", "k", "true"); /* names compared unescaped */
    member("{\"k\\u0000\":true}", "k", "-");
    member("{}", "k", "-");
    member("[{\"k\":1}]", "k", "-"); /* not an object: no members */
    member("\"k\"", "k", "-");
    /* Invalid text anywhere, even after the member, leaves no span. */
    const char *key = "k";
    sj_span m = {NULL, 0};
    CHECK_INT_EQ(sj_members("{\"k\":1,\"x\":[}", 14, 0, &key, 1, &m), TFTAP_EDECODE);
    CHECK(m.text == NULL);
    CHECK_INT_EQ(sj_members("{\"k\":[[1]]}", 11, 2, &key, 1, &m), TFTAP_ELIMIT);
    CHECK(m.text == NULL);
    CHECK_INT_EQ(sj_members("{\"k\":[[1]]}", 11, 3, &key, 1, &m), 0);
    CHECK(m.text != NULL && m.len == 5);
}

/* Address filters (common/address.c): every step matches, keys where the
 * filter gives them; quoted keys may hold dots and brackets. */
static void test_address_filter(void)
{
    const char *a = "module.m[1].module.leaf[0].tftest5_pet.y[\"a.b]\\\"c\"]";
    CHECK(tftap_address_matches("module.m", a));
    CHECK(tftap_address_matches("module.m[1]", a));
    CHECK(!tftap_address_matches("module.m[0]", a));
    CHECK(tftap_address_matches("module.m.module.leaf", a));
    CHECK(tftap_address_matches("module.m.module.leaf.tftest5_pet.y", a));
    CHECK(tftap_address_matches("module.m[1].module.leaf[0].tftest5_pet.y[\"a.b]\\\"c\"]", a));
    CHECK(!tftap_address_matches("module.m.module.leaf.tftest5_pet.y[\"a\"]", a));
    CHECK(!tftap_address_matches("module.mm", a));
    CHECK(!tftap_address_matches("module", "modules.x"));
    CHECK(!tftap_address_matches("tftest5_pet.y", a)); /* a root resource only */
    CHECK(tftap_address_matches("tftest5_pet.y", "tftest5_pet.y[2]"));
    CHECK(!tftap_address_matches("tftest5_pet.y[2]", "tftest5_pet.y[20]"));
    CHECK(!tftap_address_matches("tftest5_pet.y.z", "tftest5_pet.y"));
    CHECK(tftap_address_matches("data.tftest5_echo.e", "data.tftest5_echo.e[0]"));
    CHECK(!tftap_address_matches("module.m.", a));
    CHECK(!tftap_address_matches("module.m[1", a));
    CHECK(!tftap_address_matches("module.m", NULL));
    CHECK(tftap_filter_keeps(NULL, NULL, NULL));
    CHECK(tftap_filter_keeps("tftest5_pet", "tftest5_pet", NULL));
    CHECK(!tftap_filter_keeps("tftest5_pet.y", "tftest5_pet", NULL));
}

/* ---- sj_redact: values redacted after the fact ---- */

static int secret_is(void *ctx, const char *s, size_t n)
{
    (void)ctx;
    return n == 6 && memcmp(s, "hunter", 6) == 0;
}

/* ".config" then ".tags" then ["k"]: the path a mark names. */
static int marked_at(void *ctx, const char *path, size_t len)
{
    tftap_buf want = TFTAP_BUF_INIT;
    sj_path_member(&want, "tags", 4);
    sj_path_member(&want, "k", 1);
    int hit = len == want.len && memcmp(path, want.data, len) == 0;
    tftap_buf_done(&want);
    (void)ctx;
    return hit;
}

static void fake_mac(void *ctx, const char *json, size_t len, char out[65])
{
    (void)ctx;
    /* The length of the text in every digit: enough to tell texts apart here. */
    memset(out, "0123456789abcdef"[len % 16], 64);
    out[64] = '\0';
    (void)json;
}

static char *redacted(const char *in, int64_t counts[2])
{
    static const char *const roots[] = {"config"};
    sj_redactor r = {
        .secret = secret_is, .marked = marked_at, .mac = fake_mac, .roots = roots, .nroots = 1};
    sj_doc *d = NULL;
    tftap_buf out = TFTAP_BUF_INIT;
    CHECK_INT_EQ(sj_parse(in, strlen(in), 0, &d), 0);
    if (d)
        CHECK_INT_EQ(sj_redact(sj_root(d), &r, &out, counts), 0);
    sj_free(d);
    return tftap_buf_take(&out, NULL);
}

/* Free text: "hunter" cut out wherever it is. */
static int64_t cut_hunter(void *ctx, const char *s, size_t n, tftap_buf *out)
{
    (void)ctx;
    tftap_buf t = TFTAP_BUF_INIT;
    int64_t cut = 0;
    for (size_t i = 0; i < n;) {
        if (n - i >= 6 && memcmp(s + i, "hunter", 6) == 0) {
            tftap_buf_puts(&t, "(sensitive value)");
            i += 6;
            cut++;
        } else {
            tftap_buf_putc(&t, s[i++]);
        }
    }
    tftap_buf_json_string(out, t.data ? t.data : "", t.len);
    tftap_buf_done(&t);
    return cut;
}

static void test_redact_text(void)
{
    static const char *const roots[] = {"config"}, *const texts[] = {"diagnostics"},
                             *const verbatim[] = {"severity"};
    sj_redactor r = {.secret = secret_is,
                     .mac = fake_mac,
                     .roots = roots,
                     .nroots = 1,
                     .text = cut_hunter,
                     .texts = texts,
                     .ntexts = 1,
                     .verbatim = verbatim,
                     .nverbatim = 1};
    const char *in =
        "{\"config\":{\"n\":\"hunter\"},\"diagnostics\":[{\"severity\":\"hunter\","
        "\"summary\":\"hunter\","
        "\"detail\":\"got hunter, want x\",\"attribute\":{\"path\":\".t[\\\"hunter\\\"]\"}},"
        "{\"detail\":{\"$sensitive\":\"hmac-sha256:ab\"},\"n\":7}],"
        "\"other\":\"a hunter\"}";
    sj_doc *d = NULL;
    tftap_buf out = TFTAP_BUF_INIT;
    int64_t c[2] = {0, 0};
    CHECK_INT_EQ(sj_parse(in, strlen(in), 0, &d), 0);
    if (d)
        CHECK_INT_EQ(sj_redact(sj_root(d), &r, &out, c), 0);
    /* Values judged whole; texts keep their words, even a whole secret
     * stays a string; the protocol's words (severity) and what is not text
     * (a number, a marker) as they were;
     * outside the texts, a string only holding a secret is not one. */
    CHECK_STR_EQ(tftap_buf_cstr(&out),
                 "{\"config\":{\"n\":{\"$sensitive\":\"hmac-sha256:"
                 "8888888888888888888888888888888888888888888888888888888888888888\"}},"
                 "\"diagnostics\":[{\"severity\":\"hunter\",\"summary\":\"(sensitive value)\","
                 "\"detail\":\"got (sensitive value), want x\","
                 "\"attribute\":{\"path\":\".t[\\\"(sensitive value)\\\"]\"}},"
                 "{\"detail\":{\"$sensitive\":\"hmac-sha256:ab\"},\"n\":7}],"
                 "\"other\":\"a hunter\"}");
    CHECK_INT_EQ(c[SJ_REDACT_MARKED], 0);
    CHECK_INT_EQ(c[SJ_REDACT_EQUAL], 4);
    sj_free(d);
    tftap_buf_done(&out);
}

static void test_redact(void)
{
    int64_t c[2] = {0, 0};
    /* A marked path of any type, under a root only; equal strings anywhere. */
    char *o = redacted("{\"config\":{\"tags\":{\"k\":12,\"j\":\"x\"},\"n\":\"hunter\"},"
                       "\"other\":{\"tags\":{\"k\":12}},\"d\":[\"hunter\",\"hunter2\"]}",
                       c);
    CHECK_STR_EQ(o, "{\"config\":{\"tags\":{\"k\":{\"$sensitive\":\"hmac-sha256:"
                    "2222222222222222222222222222222222222222222222222222222222222222\"},"
                    "\"j\":\"x\"},\"n\":{\"$sensitive\":\"hmac-sha256:"
                    "8888888888888888888888888888888888888888888888888888888888888888\"}},"
                    "\"other\":{\"tags\":{\"k\":12}},\"d\":[{\"$sensitive\":\"hmac-sha256:"
                    "8888888888888888888888888888888888888888888888888888888888888888\"},"
                    "\"hunter2\"]}");
    CHECK_INT_EQ(c[SJ_REDACT_MARKED], 1);
    CHECK_INT_EQ(c[SJ_REDACT_EQUAL], 2);
    free(o);
    /* At a marked path: null stays null, an unknown loses its refinements,
     * a value redacted already stays as it is, and nothing is counted. */
    c[0] = c[1] = 0;
    o = redacted("{\"config\":{\"tags\":{\"k\":null}}}", c);
    CHECK_STR_EQ(o, "{\"config\":{\"tags\":{\"k\":null}}}");
    free(o);
    o = redacted("{\"config\":{\"tags\":{\"k\":{\"$unknown\":{\"prefix\":\"hun\"}}}}}", c);
    CHECK_STR_EQ(o, "{\"config\":{\"tags\":{\"k\":{\"$unknown\":{}}}}}");
    free(o);
    o = redacted("{\"config\":{\"tags\":{\"k\":{\"$sensitive\":\"hmac-sha256:ab\"}}}}", c);
    CHECK_STR_EQ(o, "{\"config\":{\"tags\":{\"k\":{\"$sensitive\":\"hmac-sha256:ab\"}}}}");
    free(o);
    CHECK_INT_EQ(c[SJ_REDACT_EQUAL], 0);
    /* Numbers keep their text, keys their bytes. */
    o = redacted("{\"a\\u0000b\":1.50e3,\"e\":\"\"}", c);
    CHECK_STR_EQ(o, "{\"a\\u0000b\":1.50e3,\"e\":\"\"}");
    free(o);
}

int main(void)
{
    test_valid();
    test_invalid();
    test_depth();
    test_values();
    test_at();
    test_equal();
    test_members();
    test_address_filter();
    test_redact();
    test_redact_text();
    return check_report("test_json");
}
