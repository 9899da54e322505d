/* analysis: decoded values written as HCL literals, and mock_provider
 * blocks built from recorded values (no database). */
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/analysis_int.h"
#include "tests/check.h"

static char *hcl(const char *json, const char *type, int want_rc)
{
    tftap_buf b = TFTAP_BUF_INIT;
    CHECK_INT_EQ(analysis_hcl_value(json, strlen(json), type, 0, &b), want_rc);
    tftap_buf_cstr(&b);
    return tftap_buf_take(&b, NULL);
}

#define CHECK_HCL(json, type, expected)                                                            \
    do {                                                                                           \
        char *got_ = hcl(json, type, 0);                                                           \
        CHECK_STR_EQ(got_, expected);                                                              \
        free(got_);                                                                                \
    } while (0)

static char *str(const char *s, size_t n)
{
    tftap_buf b = TFTAP_BUF_INIT;
    analysis_hcl_string(s, n, &b);
    tftap_buf_cstr(&b);
    return tftap_buf_take(&b, NULL);
}

#define CHECK_STR(s, expected)                                                                     \
    do {                                                                                           \
        char *got_ = str(s, sizeof s - 1);                                                         \
        CHECK_STR_EQ(got_, expected);                                                              \
        free(got_);                                                                                \
    } while (0)

static int contains(const char *hay, const char *needle)
{
    if (hay && strstr(hay, needle))
        return 1;
    fprintf(stderr, "--- not found: %s\n--- in:\n%s---\n", needle, hay ? hay : "(null)");
    return 0;
}

/* Templates: "${" and "%{" start interpolations and directives in a quoted
 * string, so they are doubled; a lone sign stays; the usual escapes. */
static void test_strings(void)
{
    CHECK_STR("plain", "\"plain\"");
    CHECK_STR("${var.x}", "\"$${var.x}\"");
    CHECK_STR("%{if x}y%{endif}", "\"%%{if x}y%%{endif}\"");
    /* "$${" in the value: the first sign stays, the "${" doubles. */
    CHECK_STR("$${", "\"$$${\"");
    CHECK_STR("cost: $5, 50% off, {}", "\"cost: $5, 50% off, {}\"");
    CHECK_STR("a$", "\"a$\"");
    CHECK_STR("say \"hi\"\\", "\"say \\\"hi\\\"\\\\\"");
    CHECK_STR("l1\nl2\r\tx", "\"l1\\nl2\\r\\tx\"");
    CHECK_STR("\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"");
    CHECK_STR("nul\0x", "\"nul\\u0000x\"");
    /* UTF-8 stays as it is; bytes that are not UTF-8 cannot be written. */
    CHECK_STR("caf\xc3\xa9 \xf0\x9f\x99\x82", "\"caf\xc3\xa9 \xf0\x9f\x99\x82\"");
    CHECK_STR("a\xff", "\"a\\ufffd\"");
    CHECK_STR("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""); /* a surrogate */
    CHECK_STR("\xc0\xaf", "\"\\ufffd\\ufffd\"");            /* overlong */
    CHECK_STR("\xe2\x82", "\"\\ufffd\\ufffd\"");            /* cut short */
    CHECK_HCL("\"${x}\\n\"", NULL, "\"$${x}\\n\"");
}

/* Numbers are written digit for digit, whatever their size. */
static void test_numbers(void)
{
    CHECK_HCL("0", "\"number\"", "0");
    CHECK_HCL("-17", "\"number\"", "-17");
    CHECK_HCL("123456789012345678901234567890", "\"number\"", "123456789012345678901234567890");
    CHECK_HCL("0.1", "\"number\"", "0.1");
    CHECK_HCL("1.7976931348623157e+308", "\"number\"", "1.7976931348623157e+308");
    CHECK_HCL("-2.5E-7", NULL, "-2.5E-7");
    CHECK_HCL("3.14159265358979323846264338327950288419716939937510", "\"number\"",
              "3.14159265358979323846264338327950288419716939937510");
    /* Infinity has no HCL literal; a string that reads "Infinity" is fine. */
    free(hcl("\"Infinity\"", "\"number\"", TFTAP_EINVAL));
    free(hcl("[1,\"-Infinity\"]", "[\"list\",\"number\"]", TFTAP_EINVAL));
    CHECK_HCL("\"Infinity\"", "\"string\"", "\"Infinity\"");
    CHECK_HCL("true", "\"bool\"", "true");
    CHECK_HCL("null", "\"string\"", "null");
}

static void test_structures(void)
{
    /* Keys in byte order; identifiers bare, anything else quoted, and so
     * are the words the parser would read as something else. */
    CHECK_HCL("{\"b\":1,\"a b\":2,\"A\":3,\"null\":4,\"for\":5,\"1x\":6,\"ok-key_2\":7,"
              "\"_u\":8,\"true\":9,\"${k}\":10,\"\":11}",
              "[\"map\",\"number\"]",
              "{\n"
              "  \"\"       = 11\n"
              "  \"$${k}\"  = 10\n"
              "  \"1x\"     = 6\n"
              "  A        = 3\n"
              "  _u       = 8\n"
              "  \"a b\"    = 2\n"
              "  b        = 1\n"
              "  \"for\"    = 5\n"
              "  \"null\"   = 4\n"
              "  ok-key_2 = 7\n"
              "  \"true\"   = 9\n"
              "}");
    /* Lists and sets keep their order; scalars on one line. */
    CHECK_HCL("[\"b\",\"a\",null]", "[\"list\",\"string\"]", "[\"b\", \"a\", null]");
    CHECK_HCL("[3,1,2]", "[\"set\",\"number\"]", "[3, 1, 2]");
    CHECK_HCL("[]", "[\"list\",\"string\"]", "[]");
    CHECK_HCL("{}", "[\"map\",\"string\"]", "{}");
    /* Objects inside lists inside objects, indented. */
    CHECK_HCL("{\"rules\":[{\"port\":80,\"name\":\"http\"},{\"port\":null,\"name\":\"x\"}],"
              "\"meta\":{\"tags\":[\"t\"],\"inner\":{}}}",
              "[\"object\",{\"rules\":[\"list\",[\"object\",{\"name\":\"string\",\"port\":"
              "\"number\"}]],\"meta\":[\"object\",{\"tags\":[\"list\",\"string\"],\"inner\":["
              "\"map\",\"string\"]}]}]",
              "{\n"
              "  meta = {\n"
              "    inner = {}\n"
              "    tags  = [\"t\"]\n"
              "  }\n"
              "  rules = [\n"
              "    {\n"
              "      name = \"http\"\n"
              "      port = 80\n"
              "    },\n"
              "    {\n"
              "      name = \"x\"\n"
              "      port = null\n"
              "    },\n"
              "  ]\n"
              "}");
    /* A multi-line value ends a run of aligned members; a key's width is
     * in characters, not bytes. */
    CHECK_HCL("{\"aa\":1,\"b\":{\"x\":1},\"ccc\":2,\"\xc3\xa9\xc3\xa9\":3}", NULL,
              "{\n"
              "  aa = 1\n"
              "  b = {\n"
              "    x = 1\n"
              "  }\n"
              "  ccc  = 2\n"
              "  \"\xc3\xa9\xc3\xa9\" = 3\n"
              "}");
    /* A list of lists is not one line. */
    CHECK_HCL("[[1],[]]", "[\"list\",[\"list\",\"number\"]]", "[\n  [1],\n  [],\n]");
    /* Tuples take their element types by position. */
    CHECK_HCL("[\"Infinity\",\"x\"]", "[\"tuple\",[\"string\",\"string\"]]",
              "[\"Infinity\", \"x\"]");
    free(hcl("[\"x\",\"Infinity\"]", "[\"tuple\",[\"string\",\"number\"]]", TFTAP_EINVAL));
    /* A dynamic value is written as its value; without the type the
     * wrapper is just an object. */
    CHECK_HCL("{\"type\":[\"object\",{\"k\":\"string\"}],\"value\":{\"k\":\"v\"}}", "\"dynamic\"",
              "{\n  k = \"v\"\n}");
    CHECK_HCL("{\"type\":\"number\",\"value\":\"Infinity\"}", "\"string\"",
              "{\n  type  = \"number\"\n  value = \"Infinity\"\n}");
    free(hcl("{\"type\":\"number\",\"value\":\"Infinity\"}", "\"dynamic\"", TFTAP_EINVAL));
    CHECK_HCL("null", "\"dynamic\"", "null");
}

/* What HCL cannot say, and what is not JSON. */
static void test_refused(void)
{
    free(hcl("{\"$unknown\":{}}", "\"string\"", TFTAP_EINVAL));
    free(hcl("[\"a\",{\"$unknown\":{\"prefix\":\"x\"}}]", "[\"list\",\"string\"]", TFTAP_EINVAL));
    free(hcl("{\"k\":{\"$sensitive\":\"hmac-sha256:00\"}}", "[\"map\",\"string\"]", TFTAP_EINVAL));
    free(hcl("{\"a\":", NULL, TFTAP_EDECODE));
    free(hcl("\"x\"", "[\"list\"", TFTAP_EDECODE));
    /* Deeper than the JSON reader goes: an error, no crash. */
    char deep[4000];
    size_t n = 0;
    for (int i = 0; i < 1500; i++)
        deep[n++] = '[';
    for (int i = 0; i < 1500; i++)
        deep[n++] = ']';
    deep[n] = '\0';
    free(hcl(deep, NULL, TFTAP_EDECODE));
}

/* ---- mock blocks ---- */

static const char thing_schema[] =
    "{\"attributes\":["
    "{\"name\":\"id\",\"type\":\"string\",\"computed\":true},"
    "{\"name\":\"name\",\"type\":\"string\",\"required\":true},"
    "{\"name\":\"size\",\"type\":\"string\",\"optional\":true,\"computed\":true},"
    "{\"name\":\"arn\",\"type\":\"string\",\"computed\":true},"
    "{\"name\":\"token\",\"type\":\"string\",\"computed\":true,\"sensitive\":true},"
    "{\"name\":\"tags_all\",\"type\":[\"map\",\"string\"],\"computed\":true},"
    "{\"name\":\"pending\",\"type\":\"string\",\"computed\":true},"
    "{\"name\":\"creds\",\"nested_type\":{\"nesting\":\"SINGLE\",\"attributes\":["
    "{\"name\":\"user\",\"type\":\"string\",\"computed\":true},"
    "{\"name\":\"pass\",\"type\":\"string\",\"computed\":true,\"sensitive\":true}]},"
    "\"computed\":true},"
    "{\"name\":\"endpoints\",\"nested_type\":{\"nesting\":\"LIST\",\"attributes\":["
    "{\"name\":\"url\",\"type\":\"string\",\"computed\":true}]},\"computed\":true}"
    "],\"block_types\":["
    "{\"type_name\":\"rule\",\"nesting\":\"LIST\",\"block\":{\"attributes\":["
    "{\"name\":\"name\",\"type\":\"string\",\"required\":true},"
    "{\"name\":\"rule_id\",\"type\":\"string\",\"computed\":true}]}},"
    "{\"type_name\":\"timeouts\",\"nesting\":\"SINGLE\",\"block\":{\"attributes\":["
    "{\"name\":\"create\",\"type\":\"string\",\"optional\":true,\"computed\":true}]}}"
    "]}";

static const char *thing_value(const char *id, const char *rule_id)
{
    static char buf[2][1024];
    static int k;
    k ^= 1;
    snprintf(buf[k], sizeof buf[k],
             "{\"id\":\"%s\",\"name\":\"n\",\"size\":\"big\",\"arn\":\"arn:${x}\","
             "\"token\":{\"$sensitive\":\"hmac-sha256:ab\"},\"tags_all\":{\"env\":\"prod\"},"
             "\"pending\":{\"$unknown\":{}},"
             "\"creds\":{\"user\":\"u\",\"pass\":\"p\"},"
             "\"endpoints\":[{\"url\":\"https://e\"}],"
             "\"rule\":[{\"name\":\"a\",\"rule_id\":\"%s\"},{\"name\":\"b\",\"rule_id\":\"r2\"}],"
             "\"timeouts\":null}",
             id, rule_id);
    return buf[k];
}

static char *render(analysis_mocks *m, size_t want_types)
{
    tftap_buf b = TFTAP_BUF_INIT;
    size_t ntypes = 99;
    CHECK_INT_EQ(analysis_mocks_render(m, 7, &b, &ntypes), 0);
    CHECK_INT_EQ(ntypes, want_types);
    tftap_buf_cstr(&b);
    return tftap_buf_take(&b, NULL);
}

static void test_mock_blocks(void)
{
    analysis_mocks *m;
    CHECK_INT_EQ(analysis_mocks_new(&m), 0);
    const char *cfg_b = "{\"id\":null,\"name\":\"n\",\"size\":null,\"rule\":[{\"name\":\"a\","
                        "\"rule_id\":null},{\"name\":\"b\",\"rule_id\":null}],\"timeouts\":null}";
    const char *cfg_a = "{\"id\":null,\"name\":\"n\",\"size\":\"big\",\"rule\":[{\"name\":\"a\","
                        "\"rule_id\":null}],\"timeouts\":null}";
    /* Added out of order: the plan of b, the apply of web.b, the apply of
     * web.a twice (the later one wins), an instance without address. */
    analysis_mock_value v = {"registry.opentofu.org/acme/cloud",
                             0,
                             "cloud_thing",
                             "cloud_thing.b",
                             "PlanResourceChange",
                             10,
                             thing_schema,
                             thing_value("plan", "p"),
                             cfg_b,
                             0};
    CHECK_INT_EQ(analysis_mocks_add(m, &v), 0);
    v.rpc = "ApplyResourceChange";
    v.call_id = 20;
    v.value = thing_value("id-b", "rb");
    CHECK_INT_EQ(analysis_mocks_add(m, &v), 0);
    v.address = "cloud_thing.a";
    v.call_id = 21;
    v.config = cfg_a;
    v.value = thing_value("id-a-old", "ra");
    CHECK_INT_EQ(analysis_mocks_add(m, &v), 0);
    v.call_id = 30;
    v.value = thing_value("id-a", "ra");
    CHECK_INT_EQ(analysis_mocks_add(m, &v), 0);
    v.address = NULL;
    v.call_id = 5;
    v.value = thing_value("id-none", "rn");
    CHECK_INT_EQ(analysis_mocks_add(m, &v), 0);
    /* A data source of another provider, and a type the filter left out
     * whose configuration still counts. */
    analysis_mock_value d = {"registry.opentofu.org/other/dns",
                             1,
                             "dns_zone",
                             "data.dns_zone.z",
                             "ReadDataSource",
                             40,
                             "{\"attributes\":[{\"name\":\"zone\",\"type\":\"string\","
                             "\"required\":true},{\"name\":\"serial\",\"type\":\"number\","
                             "\"computed\":true}]}",
                             "{\"zone\":\"z.\",\"serial\":2024010101000000000001}",
                             "{\"zone\":\"z.\",\"serial\":null}",
                             0};
    CHECK_INT_EQ(analysis_mocks_add(m, &d), 0);
    char *out = render(m, 2);
    CHECK(contains(out, "# Mocks for tofu test from the values recorded in tftap run 7.\n"));
    CHECK(contains(out, "mock_provider \"cloud\" {\n  # registry.opentofu.org/acme/cloud\n"));
    CHECK(contains(out, "mock_provider \"dns\" {\n"));
    CHECK(contains(out, "  mock_resource \"cloud_thing\" {\n"
                        "    # defaults from cloud_thing.a (ApplyResourceChange, call 30)\n"
                        "    # recorded with other values too: cloud_thing.b (1; tofu test gives "
                        "every instance these defaults)\n"));
    CHECK(contains(out, "\n    # creds: sensitive, never written\n    # pending"));
    CHECK(contains(out, "    # pending: unknown in the recorded plan\n"));
    CHECK(contains(out, "    # size: set in the configuration"));
    CHECK(contains(out, "    # token: sensitive, never written\n"));
    CHECK(contains(out, "    # rule: the defaults of every block come from the first recorded "
                        "one\n"));
    CHECK(contains(out, "    defaults = {\n"
                        "      arn = \"arn:$${x}\"\n"
                        "      endpoints = [\n"
                        "        {\n"
                        "          url = \"https://e\"\n"
                        "        },\n"
                        "      ]\n"
                        "      id = \"id-a\"\n"
                        "      tags_all = {\n"
                        "        env = \"prod\"\n"
                        "      }\n"
                        "      rule = {\n"
                        "        rule_id = \"ra\"\n"
                        "      }\n"
                        "    }\n"));
    /* Neither the secret, its hash, the unknown, nor the block the
     * configuration lacks (timeouts), nor a configured attribute. */
    CHECK(!strstr(out, "hmac"));
    CHECK(!strstr(out, "\"p\""));
    CHECK(!strstr(out, "timeouts ="));
    CHECK(!strstr(out, "size ="));
    CHECK(!strstr(out, "name ="));
    CHECK(!strstr(out, "id-a-old"));
    CHECK(contains(out, "  mock_data \"dns_zone\" {\n"
                        "    # defaults from data.dns_zone.z (ReadDataSource, call 40)\n"
                        "    defaults = {\n"
                        "      serial = 2024010101000000000001\n"
                        "    }\n"));
    /* Providers in byte order of their addresses. */
    CHECK(strstr(out, "mock_provider \"cloud\"") < strstr(out, "mock_provider \"dns\""));
    free(out);
    analysis_mocks_free(m);

    /* Only a filter's instance gives values; the others' configurations
     * still keep attributes out, and a block one configuration lacks is
     * left out. */
    CHECK_INT_EQ(analysis_mocks_new(&m), 0);
    analysis_mock_value f = {"registry.opentofu.org/acme/cloud",
                             0,
                             "cloud_thing",
                             "cloud_thing.b",
                             "ApplyResourceChange",
                             20,
                             thing_schema,
                             thing_value("id-b", "rb"),
                             cfg_b,
                             0};
    CHECK_INT_EQ(analysis_mocks_add(m, &f), 0);
    f.address = "cloud_thing.a";
    f.value = thing_value("id-a", "ra");
    f.config = "{\"name\":\"n\",\"size\":\"big\",\"rule\":[],\"timeouts\":null}";
    f.config_only = 1;
    CHECK_INT_EQ(analysis_mocks_add(m, &f), 0);
    out = render(m, 1);
    CHECK(contains(out, "# defaults from cloud_thing.b (ApplyResourceChange, call 20)\n"));
    CHECK(contains(out, "      id = \"id-b\"\n"));
    CHECK(contains(out, "# size: set in the configuration"));
    CHECK(!strstr(out, "rule ="));
    CHECK(!strstr(out, "other values"));
    free(out);
    analysis_mocks_free(m);

    /* Nothing to mock: a destroy's null state, an unnamed provider. */
    CHECK_INT_EQ(analysis_mocks_new(&m), 0);
    analysis_mock_value z = {NULL,         0,      "x_y", "x_y.a", "ApplyResourceChange", 1,
                             thing_schema, "null", NULL,  0};
    CHECK_INT_EQ(analysis_mocks_add(m, &z), 0);
    out = render(m, 0);
    CHECK(!strstr(out, "mock_resource"));
    free(out);
    z.value = "{\"id\":\"i\"}";
    z.block_schema = "{\"attributes\":[{\"name\":\"id\",\"type\":\"string\",\"computed\":true}]}";
    CHECK_INT_EQ(analysis_mocks_add(m, &z), 0);
    out = render(m, 1);
    CHECK(contains(out, "mock_provider \"x\" {\n  # provider address not recorded\n"));
    CHECK(contains(out, "defaults = {\n      id = \"i\"\n    }\n"));
    free(out);
    analysis_mocks_free(m);

    /* Names from a schema someone else recorded stay inside their comment
     * line (and quoted as keys). */
    CHECK_INT_EQ(analysis_mocks_new(&m), 0);
    z.block_schema = "{\"attributes\":[{\"name\":\"a\\nb\",\"type\":\"string\",\"computed\":true},"
                     "{\"name\":\"c\\u0000d\",\"type\":\"string\",\"computed\":true},"
                     "{\"name\":7,\"computed\":true}]}";
    z.value = "{\"a\\nb\":{\"$unknown\":{}},\"c\\u0000d\":\"v\"}";
    CHECK_INT_EQ(analysis_mocks_add(m, &z), 0);
    out = render(m, 1);
    CHECK(contains(out, "\n    # a?b: unknown in the recorded plan\n"));
    CHECK(contains(out, "\n      \"c\\u0000d\" = \"v\"\n"));
    free(out);
    /* A malformed value is an error, not a crash. */
    z.value = "{\"id\":";
    z.call_id = 9;
    z.address = "x_y.0";
    CHECK_INT_EQ(analysis_mocks_add(m, &z), 0);
    tftap_buf b = TFTAP_BUF_INIT;
    CHECK_INT_EQ(analysis_mocks_render(m, 0, &b, NULL), TFTAP_EDECODE);
    tftap_buf_done(&b);
    analysis_mocks_free(m);
}

int main(void)
{
    test_strings();
    test_numbers();
    test_structures();
    test_refused();
    test_mock_blocks();
    return check_report("test_mock");
}
