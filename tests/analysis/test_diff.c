/* Unit tests of the run diff and the schema diff over hand-written decoded
 * values (docs/decoded-values.md) and providers-schema JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/analysis_int.h"
#include "tests/check.h"

/* A PlanResourceChange call. */
static analysis_diff_call plan(int64_t id, const char *addr, const char *req, const char *resp)
{
    return (analysis_diff_call){.call_id = id,
                                .provider = "registry.opentofu.org/x/t",
                                .rpc = "PlanResourceChange",
                                .type_name = "t_server",
                                .address = addr,
                                .has_status = 1,
                                .request_json = req,
                                .response_json = resp,
                                .schema_version = 0};
}

/* The findings as "B|I kind path change" joined by ";", in report order. */
static char *summary(analysis_diff *d)
{
    tftap_buf json = TFTAP_BUF_INIT, out = TFTAP_BUF_INIT;
    CHECK_INT_EQ(analysis_diff_render(d, ANALYSIS_DIFF_JSON, 0, 0, &json), 0);
    sj_doc *doc = NULL;
    CHECK_INT_EQ(sj_parse(json.data, json.len, 64, &doc), 0);
    const sj_node *ch = doc ? sj_get(sj_root(doc), "changes") : NULL;
    for (const sj_node *c = ch ? ch->child : NULL; c; c = c->next) {
        const sj_node *beh = sj_get(c, "behaviour"), *path = sj_get(c, "path"),
                      *change = sj_get(c, "change");
        tftap_buf_printf(&out, "%s%s %s %s %s", out.len ? ";" : "", beh->boolean ? "B" : "I",
                         sj_get(c, "kind")->str, path->kind == SJ_STRING ? path->str : "-",
                         change ? change->str : "-");
    }
    sj_free(doc);
    tftap_buf_done(&json);
    tftap_buf_cstr(&out);
    return tftap_buf_take(&out, NULL);
}

static char *diff_summary(const analysis_diff_call *a, size_t na, const analysis_diff_call *b,
                          size_t nb, const analysis_diff_opts *o, size_t *behaviour, size_t *inputs)
{
    analysis_diff *d = NULL;
    int rc = analysis_diff_calls(a, na, b, nb, o, &d);
    CHECK_INT_EQ(rc, 0);
    if (rc)
        return strdup("(error)");
    char *s = summary(d);
    if (behaviour)
        *behaviour = analysis_diff_count(d);
    if (inputs)
        *inputs = analysis_diff_input_count(d);
    analysis_diff_free(d);
    return s;
}

#define REQ(prior, config)                                                                         \
    "{\"type_name\":\"t_server\",\"prior_state\":" prior ",\"proposed_new_state\":null,"           \
    "\"config\":" config ",\"prior_private\":null}"
#define RESP(planned, rr, diags)                                                                   \
    "{\"planned_state\":" planned ",\"requires_replace\":" rr                                      \
    ",\"planned_private\":{\"size\":0,\"sha256\":\"e3b0\"},\"diagnostics\":" diags "}"

static void test_random_prior_is_input(void)
{
    /* The id comes from the prior state in both runs: equal behaviour. */
    analysis_diff_call a =
        plan(1, "t_server.a", REQ("{\"id\":\"r-1\",\"n\":\"x\"}", "{\"id\":null,\"n\":\"y\"}"),
             RESP("{\"id\":\"r-1\",\"n\":\"y\"}", "[]", "[]"));
    analysis_diff_call b =
        plan(9, "t_server.a", REQ("{\"id\":\"r-2\",\"n\":\"x\"}", "{\"id\":null,\"n\":\"y\"}"),
             RESP("{\"id\":\"r-2\",\"n\":\"y\"}", "[]", "[]"));
    size_t beh = 9, in = 9;
    char *s = diff_summary(&a, 1, &b, 1, NULL, &beh, &in);
    CHECK_STR_EQ(s, "I input .id -");
    CHECK_INT_EQ(beh, 0);
    CHECK_INT_EQ(in, 1);
    free(s);

    /* --no-inputs: counted, not listed. */
    analysis_diff *d = NULL;
    CHECK_INT_EQ(analysis_diff_calls(&a, 1, &b, 1, NULL, &d), 0);
    tftap_buf out = TFTAP_BUF_INIT;
    CHECK_INT_EQ(analysis_diff_render(d, ANALYSIS_DIFF_JSON, ANALYSIS_DIFF_NO_INPUTS, 0, &out), 0);
    CHECK(strstr(tftap_buf_cstr(&out), "\"input_differences\":1,") != NULL);
    CHECK(strstr(tftap_buf_cstr(&out), "\"changes\":[]") != NULL);
    tftap_buf_reset(&out);
    CHECK_INT_EQ(analysis_diff_render(d, ANALYSIS_DIFF_TEXT, ANALYSIS_DIFF_NO_INPUTS, 0, &out), 0);
    CHECK(strstr(tftap_buf_cstr(&out), "Input differences") == NULL);
    CHECK(strstr(tftap_buf_cstr(&out), "0 behaviour differences, 1 input difference.") != NULL);
    tftap_buf_reset(&out);
    CHECK_INT_EQ(analysis_diff_render(d, ANALYSIS_DIFF_TEXT, 0, 0, &out), 0);
    CHECK(strstr(tftap_buf_cstr(&out), "Input differences") != NULL);
    tftap_buf_reset(&out);
    CHECK_INT_EQ(analysis_diff_render(d, ANALYSIS_DIFF_MARKDOWN, ANALYSIS_DIFF_NO_INPUTS, 0, &out),
                 0);
    CHECK(strstr(tftap_buf_cstr(&out), "<details>") == NULL);
    tftap_buf_done(&out);
    analysis_diff_free(d);
}

static void test_provider_choices(void)
{
    /* .size: a default the provider chose changed; .tier: taken from
     * config in A, chosen by the provider in B; .zone left unknown with a
     * refinement in B only; .gone only in A (provider-chosen: behaviour). */
    analysis_diff_call a =
        plan(1, "t_server.a", REQ("null", "{\"size\":null,\"tier\":\"t\",\"zone\":null}"),
             RESP("{\"size\":\"small\",\"tier\":\"t\",\"zone\":{\"$unknown\":{}},"
                  "\"gone\":\"g\"}",
                  "[]", "[]"));
    analysis_diff_call b =
        plan(2, "t_server.a", REQ("null", "{\"size\":null,\"tier\":\"t\",\"zone\":null}"),
             RESP("{\"size\":\"medium\",\"tier\":\"u\",\"zone\":{\"$unknown\":"
                  "{\"prefix\":\"z-\"}}}",
                  "[]", "[]"));
    size_t beh = 0;
    char *s = diff_summary(&a, 1, &b, 1, NULL, &beh, NULL);
    CHECK_STR_EQ(s, "B attribute .gone -;B attribute .size -;B attribute .tier -;"
                    "B attribute .zone -");
    CHECK_INT_EQ(beh, 4);
    free(s);

    /* --ignore, with and without the leading dot, and globs. */
    const char *ign[] = {"gone", ".t*", "[z]one"};
    analysis_diff_opts o = {.ignore = ign, .nignore = 3};
    s = diff_summary(&a, 1, &b, 1, &o, &beh, NULL);
    CHECK_STR_EQ(s, "B attribute .size -");
    free(s);

    /* Same unknown refinements: equal. */
    analysis_diff_call c = plan(3, "t_server.a", REQ("null", "{\"z\":null}"),
                                RESP("{\"z\":{\"$unknown\":{\"prefix\":\"z-\"}}}", "[]", "[]"));
    s = diff_summary(&c, 1, &c, 1, NULL, &beh, NULL);
    CHECK_STR_EQ(s, "");
    CHECK_INT_EQ(beh, 0);
    free(s);
}

static void test_nested_and_lists(void)
{
    /* Nested blocks are followed into; a list of another length is one leaf. */
    analysis_diff_call a = plan(
        1, "t_server.a", REQ("null", "{\"rule\":[{\"port\":1,\"name\":\"a\"}],\"tags\":[\"x\"]}"),
        RESP("{\"rule\":[{\"port\":1,\"name\":\"a\"}],\"tags\":[\"x\"]}", "[]", "[]"));
    analysis_diff_call b = plan(
        2, "t_server.a", REQ("null", "{\"rule\":[{\"port\":1,\"name\":\"a\"}],\"tags\":[\"x\"]}"),
        RESP("{\"rule\":[{\"port\":2,\"name\":\"a\"}],\"tags\":[\"x\",\"y\"]}", "[]", "[]"));
    char *s = diff_summary(&a, 1, &b, 1, NULL, NULL, NULL);
    /* (A list whose length changed is one value in B, its elements in A.) */
    CHECK_STR_EQ(s, "B attribute .rule[0].port -;B attribute .tags -;I input .tags[0] -");
    free(s);
    /* A key that is not an identifier is quoted. */
    analysis_diff_call c = plan(3, "t_server.a", REQ("null", "{\"m\":{\"a b\":\"1\"}}"),
                                RESP("{\"m\":{\"a b\":\"2\"}}", "[]", "[]"));
    analysis_diff_call d = plan(4, "t_server.a", REQ("null", "{\"m\":{\"a b\":\"1\"}}"),
                                RESP("{\"m\":{\"a b\":\"3\"}}", "[]", "[]"));
    s = diff_summary(&c, 1, &d, 1, NULL, NULL, NULL);
    CHECK_STR_EQ(s, "B attribute .m[\"a b\"] -");
    free(s);
}

static void test_replace_and_diagnostics(void)
{
    const char *prior = "{\"id\":\"i\",\"zone\":\"z1\"}", *cfg = "{\"id\":null,\"zone\":\"z2\"}";
    char req[256], create_req[256];
    snprintf(req, sizeof req, REQ("%s", "%s"), prior, cfg);
    snprintf(create_req, sizeof create_req, REQ("null", "%s"), cfg);
    analysis_diff_call a[2] = {
        plan(1, "t_server.a", req,
             RESP("{\"id\":\"i\",\"zone\":\"z2\"}", "[]",
                  "[{\"severity\":\"WARNING\",\"summary\":\"old\",\"detail\":\"d\",\"attribute\":"
                  "null},{\"severity\":\"WARNING\",\"summary\":\"same\",\"detail\":\"one\","
                  "\"attribute\":{\"path\":\".zone\",\"steps\":[]}}]")),
    };
    analysis_diff_call b[2] = {
        plan(5, "t_server.a", req,
             RESP("{\"id\":\"i\",\"zone\":\"z2\"}", "[{\"path\":\".zone\",\"steps\":[]}]",
                  "[{\"severity\":\"WARNING\",\"summary\":\"same\",\"detail\":\"two\","
                  "\"attribute\":{\"path\":\".zone\",\"steps\":[]}},{\"severity\":\"ERROR\","
                  "\"summary\":\"new\",\"detail\":\"\",\"attribute\":null}]")),
        /* The create half of the replacement: folded into the action. */
        plan(6, "t_server.a", create_req,
             RESP("{\"id\":{\"$unknown\":{}},\"zone\":\"z2\"}", "[]", "[]")),
    };
    char *s = diff_summary(a, 1, b, 2, NULL, NULL, NULL);
    CHECK_STR_EQ(s, "B action - -;B requires_replace .zone added;B diagnostic - removed;"
                    "B diagnostic - changed;B diagnostic - added");
    free(s);
    /* Both replacing: the create halves pair up and compare. */
    s = diff_summary(b, 2, b, 2, NULL, NULL, NULL);
    CHECK_STR_EQ(s, "");
    free(s);
}

static void test_pairing(void)
{
    /* Calls pair by provider, method, type, address, then order: the second
     * validate of t_server in B warns; B reads a data source A never read;
     * A configured the provider, B did not. */
    analysis_diff_call a[3] = {
        {.call_id = 1,
         .provider = "p",
         .rpc = "ValidateResourceConfig",
         .type_name = "t_server",
         .response_json = "{\"diagnostics\":[]}",
         .schema_version = -1},
        {.call_id = 2,
         .provider = "p",
         .rpc = "ValidateResourceConfig",
         .type_name = "t_server",
         .response_json = "{\"diagnostics\":[]}",
         .schema_version = -1},
        {.call_id = 3,
         .provider = "p",
         .rpc = "ConfigureProvider",
         .response_json = "{\"diagnostics\":[]}",
         .schema_version = -1},
    };
    analysis_diff_call b[3] = {
        {.call_id = 11,
         .provider = "p",
         .rpc = "ValidateResourceConfig",
         .type_name = "t_server",
         .response_json = "{\"diagnostics\":[]}",
         .schema_version = -1},
        {.call_id = 12,
         .provider = "p",
         .rpc = "ValidateResourceConfig",
         .type_name = "t_server",
         .response_json = "{\"diagnostics\":[{\"severity\":\"WARNING\",\"summary\":\"w\"}]}",
         .schema_version = -1},
        {.call_id = 13,
         .provider = "p",
         .rpc = "ReadDataSource",
         .type_name = "t_echo",
         .address = "data.t_echo.e",
         .request_json = "{\"config\":{\"a\":1}}",
         .response_json = "{\"state\":{\"a\":1},\"diagnostics\":[]}",
         .schema_version = -1},
    };
    char *s = diff_summary(a, 3, b, 3, NULL, NULL, NULL);
    /* Groups: the data source, the provider (its own calls), the type. */
    CHECK_STR_EQ(s, "B only_in_b - -;B only_in_a - -;B diagnostic - added");
    free(s);
    /* A filter keeps one address or type (and an address's instances). */
    analysis_diff_opts o = {.filter = "t_server"};
    s = diff_summary(a, 3, b, 3, &o, NULL, NULL);
    CHECK_STR_EQ(s, "B diagnostic - added");
    free(s);
    analysis_diff_call ia =
        plan(1, "t_server.a[0]", REQ("null", "{\"x\":null}"), RESP("{\"x\":1}", "[]", "[]"));
    analysis_diff_call ib =
        plan(2, "t_server.a[0]", REQ("null", "{\"x\":null}"), RESP("{\"x\":2}", "[]", "[]"));
    o.filter = "t_server.a";
    s = diff_summary(&ia, 1, &ib, 1, &o, NULL, NULL);
    CHECK_STR_EQ(s, "B attribute .x -");
    free(s);
    /* Terraform's and OpenTofu's registry addresses of one provider pair. */
    ib.provider = "registry.terraform.io/x/t";
    s = diff_summary(&ia, 1, &ib, 1, NULL, NULL, NULL);
    CHECK_STR_EQ(s, "B attribute .x -");
    free(s);
    ib.provider = "example.com/x/t";
    s = diff_summary(&ia, 1, &ib, 1, NULL, NULL, NULL);
    CHECK_STR_EQ(s, "B only_in_a - -;B only_in_b - -");
    free(s);
    o.filter = "t_server.ab";
    s = diff_summary(&ia, 1, &ib, 1, &o, NULL, NULL);
    CHECK_STR_EQ(s, "");
    free(s);
}

/* A plan not saved to a file names no new object: its calls pair with the
 * named ones of the same type in call order; two named calls of different
 * addresses never pair. */
static void test_named_with_unnamed(void)
{
    analysis_diff_call a[4] = {
        plan(1, "t_server.a", REQ("null", "{\"x\":null}"), RESP("{\"x\":1}", "[]", "[]")),
        plan(2, "t_server.b", REQ("null", "{\"x\":null}"), RESP("{\"x\":5}", "[]", "[]")),
        plan(3, "t_server.c", REQ("null", "{\"x\":null}"), RESP("{\"x\":7}", "[]", "[]")),
        plan(4, "t_server.d", REQ("null", "{\"x\":null}"), RESP("{\"x\":9}", "[]", "[]")),
    };
    analysis_diff_call b[4] = {
        plan(11, NULL, REQ("null", "{\"x\":null}"), RESP("{\"x\":1}", "[]", "[]")),
        plan(12, "t_server.b", REQ("null", "{\"x\":null}"), RESP("{\"x\":5}", "[]", "[]")),
        plan(13, NULL, REQ("null", "{\"x\":null}"), RESP("{\"x\":8}", "[]", "[]")),
        plan(14, "t_server.e", REQ("null", "{\"x\":null}"), RESP("{\"x\":9}", "[]", "[]")),
    };
    char *s = diff_summary(a, 4, b, 4, NULL, NULL, NULL);
    CHECK_STR_EQ(s, "B attribute .x -;B only_in_a - -;B only_in_b - -");
    free(s);
    /* Both ways: the unnamed in run A. */
    s = diff_summary(b, 3, a, 3, NULL, NULL, NULL);
    CHECK_STR_EQ(s, "B attribute .x -");
    free(s);
    analysis_diff *d = NULL;
    CHECK_INT_EQ(analysis_diff_calls(a, 4, b, 4, NULL, &d), 0);
    tftap_buf out = TFTAP_BUF_INIT;
    CHECK_INT_EQ(analysis_diff_render(d, ANALYSIS_DIFF_TEXT, 0, 0, &out), 0);
    printf("---- named with unnamed ----\n%s", tftap_buf_cstr(&out));
    CHECK(strstr(tftap_buf_cstr(&out), "t_server.c") != NULL);
    tftap_buf_done(&out);
    analysis_diff_free(d);
}

static void test_status_private_deferred_version(void)
{
    analysis_diff_call a = {.call_id = 1,
                            .provider = "p",
                            .rpc = "ReadResource",
                            .type_name = "t",
                            .address = "t.a",
                            .has_status = 1,
                            .status_code = 0,
                            .request_json = "{\"current_state\":{\"a\":1}}",
                            .response_json =
                                "{\"new_state\":{\"a\":1},\"diagnostics\":[],"
                                "\"private\":{\"size\":3,\"sha256\":\"aa\"},\"deferred\":null}",
                            .schema_version = 0};
    analysis_diff_call b = a;
    b.call_id = 2;
    b.status_code = 2;
    b.schema_version = 1;
    b.response_json = "{\"new_state\":{\"a\":1},\"diagnostics\":[],\"private\":{\"size\":3,"
                      "\"sha256\":\"bb\"},\"deferred\":{\"reason\":\"PROVIDER_CONFIG_UNKNOWN\"}}";
    char *s = diff_summary(&a, 1, &b, 1, NULL, NULL, NULL);
    CHECK_STR_EQ(s, "B status - -;B schema_version - -;B private - -;B deferred - -");
    free(s);
}

static void test_errors_and_formats(void)
{
    analysis_diff_call bad = plan(1, "t.a", "{\"prior_state\":", "{}");
    analysis_diff *d = NULL;
    CHECK_INT_EQ(analysis_diff_calls(&bad, 1, &bad, 1, NULL, &d), TFTAP_EDECODE);
    CHECK(d == NULL);

    /* Markdown: one <details> per address; the cap counts what it left out. */
    analysis_diff_call a[3], b[3];
    const char *addrs[3] = {"t.a", "t.b", "t.c"};
    for (int i = 0; i < 3; i++) {
        a[i] = plan(i + 1, addrs[i], REQ("null", "{\"x\":null}"), RESP("{\"x\":1}", "[]", "[]"));
        b[i] = plan(i + 11, addrs[i], REQ("null", "{\"x\":null}"), RESP("{\"x\":2}", "[]", "[]"));
    }
    CHECK_INT_EQ(analysis_diff_calls(a, 3, b, 3, NULL, &d), 0);
    tftap_buf md = TFTAP_BUF_INIT;
    CHECK_INT_EQ(analysis_diff_render(d, ANALYSIS_DIFF_MARKDOWN, 0, 0, &md), 0);
    int n = 0;
    for (const char *p = tftap_buf_cstr(&md); (p = strstr(p, "<details>")); p++)
        n++;
    CHECK_INT_EQ(n, 3);
    CHECK(strstr(md.data, "!   ~ planned.x: 1 (chosen by provider) -> 2 (chosen by provider)") !=
          NULL);
    tftap_buf_reset(&md);
    CHECK_INT_EQ(analysis_diff_render(d, ANALYSIS_DIFF_MARKDOWN, 0, 500, &md), 0);
    CHECK(md.len <= 500);
    CHECK(strstr(tftap_buf_cstr(&md), "more address") != NULL);
    tftap_buf_reset(&md);
    CHECK_INT_EQ(analysis_diff_render(d, ANALYSIS_DIFF_TEXT, ANALYSIS_DIFF_COLOR, 0, &md), 0);
    CHECK(strstr(tftap_buf_cstr(&md), "\033[33m~\033[0m planned.x") != NULL);
    tftap_buf_done(&md);
    analysis_diff_free(d);
}

/* Run A summarized and streamed (analysis_diff_calls_streamed, what
 * analysis_diff_runs does so as not to hold A's JSON): the same findings as
 * with A's JSON held, whatever order the stream gives the calls in. */
struct fake_stream {
    const analysis_diff_call *calls; /* with their JSON */
    size_t n;
    int reverse;
    int64_t skip; /* a call id not given again, or 0 */
    size_t given;
};

static int fake_stream(void *ctx, analysis_diff_json_fn fn, void *fctx)
{
    struct fake_stream *x = ctx;
    for (size_t k = 0; k < x->n; k++) {
        const analysis_diff_call *c = &x->calls[x->reverse ? x->n - 1 - k : k];
        if (c->call_id == x->skip)
            continue;
        x->given++;
        int rc = fn(fctx, c->call_id, c->request_json, c->response_json);
        if (rc)
            return rc;
    }
    return 0;
}

static void test_streamed(void)
{
    analysis_diff_call a[4] = {
        plan(1, "t_server.a", REQ("{\"id\":\"r-1\",\"n\":\"x\"}", "{\"id\":null,\"n\":\"y\"}"),
             RESP("{\"id\":\"r-1\",\"n\":\"y\"}", "[]", "[]")),
        plan(2, "t_server.b", REQ("null", "{\"x\":null}"), RESP("{\"x\":5}", "[]", "[]")),
        plan(3, "t_server.c", REQ("{\"x\":1}", "{\"x\":2}"),
             RESP("{\"x\":2}", "[{\"path\":\".x\"}]", "[]")),
        plan(4, "t_server.only_a", REQ("null", "{\"x\":null}"), RESP("{\"x\":9}", "[]", "[]")),
    };
    analysis_diff_call b[4] = {
        plan(11, "t_server.a", REQ("{\"id\":\"r-2\",\"n\":\"x\"}", "{\"id\":null,\"n\":\"y\"}"),
             RESP("{\"id\":\"r-2\",\"n\":\"y\"}", "[]", "[]")),
        plan(12, "t_server.b", REQ("null", "{\"x\":null}"), RESP("{\"x\":6}", "[]", "[]")),
        plan(13, "t_server.c", REQ("{\"x\":1}", "{\"x\":2}"), RESP("{\"x\":2}", "[]", "[]")),
        plan(14, "t_server.only_b", REQ("null", "{\"x\":null}"), RESP("{\"x\":9}", "[]", "[]")),
    };
    char *want = diff_summary(a, 4, b, 4, NULL, NULL, NULL);
    CHECK(strstr(want, "attribute .x") != NULL && strstr(want, "only_in_b") != NULL);
    analysis_diff_call sum[4];
    for (int i = 0; i < 4; i++) {
        sum[i] = a[i];
        CHECK_INT_EQ(analysis_diff_call_summarize(&sum[i]), 0);
        CHECK_INT_EQ(sum[i].summarized, 1);
        sum[i].request_json = sum[i].response_json = NULL;
    }
    CHECK_STR_EQ(sum[1].action, "create");
    CHECK_INT_EQ(sum[1].prior_null, 1);
    CHECK_STR_EQ(sum[2].action, "replace");
    CHECK_INT_EQ(sum[2].prior_null, 0);
    for (int reverse = 0; reverse < 2; reverse++) {
        struct fake_stream fs = {a, 4, reverse, 0, 0};
        analysis_diff *d = NULL;
        CHECK_INT_EQ(analysis_diff_calls_streamed(sum, 4, fake_stream, &fs, b, 4, NULL, &d), 0);
        char *got = d ? summary(d) : strdup("(error)");
        CHECK_STR_EQ(got, want);
        CHECK_INT_EQ(fs.given, 4);
        free(got);
        analysis_diff_free(d);
    }
    /* A call the stream does not give again fails the diff. */
    struct fake_stream fs = {a, 4, 0, 2, 0};
    analysis_diff *d = NULL;
    CHECK_INT_EQ(analysis_diff_calls_streamed(sum, 4, fake_stream, &fs, b, 4, NULL, &d),
                 TFTAP_ENOTFOUND);
    CHECK(d == NULL);
    /* Run B's calls must carry their JSON. */
    CHECK_INT_EQ(analysis_diff_calls_streamed(sum, 4, fake_stream, &fs, sum, 4, NULL, &d),
                 TFTAP_EINVAL);
    CHECK(d == NULL);
    /* Malformed JSON: when summarized, and when given again. */
    analysis_diff_call bad = plan(1, "t.a", "{\"prior_state\":", "{}");
    CHECK_INT_EQ(analysis_diff_call_summarize(&bad), TFTAP_EDECODE);
    analysis_diff_call one = sum[1];
    analysis_diff_call broken = a[1];
    broken.response_json = "{\"planned_state\":";
    struct fake_stream fb = {&broken, 1, 0, 0, 0};
    CHECK_INT_EQ(analysis_diff_calls_streamed(&one, 1, fake_stream, &fb, &b[1], 1, NULL, &d),
                 TFTAP_EDECODE);
    CHECK(d == NULL);
    free(want);
}

/* An UpgradeResourceState call (never named), of a state with id and n. */
static analysis_diff_call upgrade(int64_t id, const char *state)
{
    static char req[32][160], resp[32][160]; /* by id: ids under 32 */
    int k = (int)(id % 32);
    snprintf(req[k], sizeof req[k],
             "{\"type_name\":\"t_server\",\"version\":0,\"raw_state\":{\"json\":%s}}", state);
    snprintf(resp[k], sizeof resp[k], "{\"upgraded_state\":%s,\"diagnostics\":[]}", state);
    return (analysis_diff_call){.call_id = id,
                                .provider = "registry.opentofu.org/x/t",
                                .rpc = "UpgradeResourceState",
                                .type_name = "t_server",
                                .has_status = 1,
                                .request_json = req[k],
                                .response_json = resp[k],
                                .schema_version = 0};
}

/* Unnamed calls of one type that came in another order (parallel walks)
 * pair with the call of the other run that asked the same, not by order:
 * the same states upgraded in another order are no difference. What
 * asked nothing alike pairs by order, and its difference shows. */
static void test_unnamed_alike(void)
{
    analysis_diff_call a[4] = {
        upgrade(1, "{\"id\":\"p-1\",\"n\":1}"),
        upgrade(2, "{\"id\":\"p-2\",\"n\":2}"),
        upgrade(3, "{\"id\":\"p-3\",\"n\":3}"),
        upgrade(4, "{\"id\":\"p-4\",\"n\":4}"),
    };
    analysis_diff_call b[4] = {
        upgrade(11, "{\"id\":\"p-3\",\"n\":3}"),
        upgrade(12, "{\"id\":\"p-1\",\"n\":1}"),
        upgrade(13, "{\"id\":\"p-9\",\"n\":9}"),
        upgrade(14, "{\"id\":\"p-2\",\"n\":2}"),
    };
    size_t behaviour = 9, inputs = 9;
    char *s = diff_summary(a, 4, b, 4, NULL, &behaviour, &inputs);
    /* p-4 against p-9: the one real difference, two attributes of it. */
    CHECK_STR_EQ(s, "I input .id -;I input .n -");
    CHECK_INT_EQ(behaviour, 0);
    CHECK_INT_EQ(inputs, 2);
    free(s);
    analysis_diff *d = NULL;
    CHECK_INT_EQ(analysis_diff_calls(a, 4, b, 4, NULL, &d), 0);
    tftap_buf out = TFTAP_BUF_INIT;
    CHECK_INT_EQ(analysis_diff_render(d, ANALYSIS_DIFF_TEXT, 0, 0, &out), 0);
    CHECK(strstr(tftap_buf_cstr(&out), "(calls 4, 13)") != NULL);
    tftap_buf_done(&out);
    analysis_diff_free(d);
    /* The same states twice in one run: each pairs once. */
    b[2] = upgrade(13, "{\"id\":\"p-1\",\"n\":1}");
    s = diff_summary(a, 4, b, 4, NULL, &behaviour, &inputs);
    CHECK_STR_EQ(s, "I input .id -;I input .n -");
    free(s);
    /* A secret hashed with another key (a bundle's) asks the same. */
    analysis_diff_call ka[2] = {
        upgrade(21, "{\"id\":\"p-1\",\"pw\":{\"$sensitive\":\"hmac-sha256:aa11\"}}"),
        upgrade(22, "{\"id\":\"p-2\",\"pw\":{\"$sensitive\":\"hmac-sha256:bb22\"}}"),
    };
    analysis_diff_call kb[2] = {
        upgrade(23, "{\"id\":\"p-2\",\"pw\":{\"$sensitive\":\"hmac-sha256:dd44\"}}"),
        upgrade(24, "{\"id\":\"p-1\",\"pw\":{\"$sensitive\":\"hmac-sha256:cc33\"}}"),
    };
    s = diff_summary(ka, 2, kb, 2, NULL, &behaviour, &inputs);
    CHECK(strstr(s, ".id") == NULL); /* p-1 with p-1, p-2 with p-2 */
    free(s);
    /* Run A streamed (summarized first): paired the same way. */
    b[2] = upgrade(13, "{\"id\":\"p-9\",\"n\":9}");
    analysis_diff_call sum[4];
    for (int i = 0; i < 4; i++) {
        sum[i] = a[i];
        CHECK_INT_EQ(analysis_diff_call_summarize(&sum[i]), 0);
        CHECK(sum[i].request_digest != 0);
        sum[i].request_json = sum[i].response_json = NULL;
    }
    CHECK(sum[0].request_digest != sum[1].request_digest);
    struct fake_stream fs = {a, 4, 1, 0, 0};
    CHECK_INT_EQ(analysis_diff_calls_streamed(sum, 4, fake_stream, &fs, b, 4, NULL, &d), 0);
    s = d ? summary(d) : strdup("(error)");
    CHECK_STR_EQ(s, "I input .id -;I input .n -");
    free(s);
    analysis_diff_free(d);
}

/* ---- schema diff ------------------------------------------------------------- */

static char *schema_summary(const char *a, const char *b, int breaking_only, size_t *count)
{
    analysis_schema_diff *d = NULL;
    CHECK_INT_EQ(analysis_schema_diff_new(a, strlen(a), b, strlen(b), &d), 0);
    if (!d)
        return strdup("(error)");
    tftap_buf json = TFTAP_BUF_INIT, out = TFTAP_BUF_INIT;
    CHECK_INT_EQ(analysis_schema_diff_render(d, ANALYSIS_DIFF_JSON, 0, breaking_only, &json), 0);
    *count = analysis_schema_diff_count(d, breaking_only);
    sj_doc *doc = NULL;
    CHECK_INT_EQ(sj_parse(json.data, json.len, 64, &doc), 0);
    const sj_node *l = doc ? sj_get(sj_root(doc), "list") : NULL;
    for (const sj_node *c = l ? l->child : NULL; c; c = c->next)
        tftap_buf_printf(&out, "%s%s %s %s %s%s", out.len ? ";" : "", sj_get(c, "kind")->str,
                         sj_get(c, "name")->str, sj_get(c, "path")->str, sj_get(c, "change")->str,
                         sj_get(c, "breaking")->boolean ? " !" : "");
    sj_free(doc);
    tftap_buf_done(&json);
    analysis_schema_diff_free(d);
    tftap_buf_cstr(&out);
    return tftap_buf_take(&out, NULL);
}

static void test_schema_diff(void)
{
    const char *a =
        "{\"format_version\":\"1.0\",\"provider_schemas\":{\"r/x/t\":{"
        "\"provider\":{\"version\":0,\"block\":{\"attributes\":{\"region\":{\"type\":\"string\","
        "\"optional\":true}}}},"
        "\"resource_schemas\":{"
        "\"t_a\":{\"version\":0,\"block\":{\"attributes\":{"
        "\"keep\":{\"type\":\"string\",\"optional\":true},"
        "\"gone\":{\"type\":\"string\",\"optional\":true},"
        "\"num\":{\"type\":\"number\",\"optional\":true},"
        "\"req\":{\"type\":\"string\",\"optional\":true},"
        "\"loose\":{\"type\":\"string\",\"required\":true},"
        "\"sec\":{\"type\":\"string\",\"optional\":true},"
        "\"wo\":{\"type\":\"string\",\"optional\":true},"
        "\"old\":{\"type\":\"string\",\"optional\":true},"
        "\"nest\":{\"nested_type\":{\"attributes\":{\"x\":{\"type\":\"string\",\"optional\":true}},"
        "\"nesting_mode\":\"list\"},\"optional\":true}},"
        "\"block_types\":{\"rule\":{\"nesting_mode\":\"list\",\"block\":{},\"max_items\":5},"
        "\"grow\":{\"nesting_mode\":\"list\",\"block\":{},\"max_items\":1},"
        "\"mode\":{\"nesting_mode\":\"list\",\"block\":{}},"
        "\"min\":{\"nesting_mode\":\"list\",\"block\":{}}}}},"
        "\"t_removed\":{\"version\":0,\"block\":{}}},"
        "\"functions\":{\"f\":{\"return_type\":\"string\",\"parameters\":[{\"name\":\"s\","
        "\"type\":\"string\"}]}}}}}";
    const char *b =
        "{\"format_version\":\"1.0\",\"provider_schemas\":{\"r/x/t\":{"
        "\"provider\":{\"version\":0,\"block\":{\"attributes\":{\"region\":{\"type\":\"string\","
        "\"optional\":true}}}},"
        "\"resource_schemas\":{"
        "\"t_a\":{\"version\":1,\"block\":{\"attributes\":{"
        "\"keep\":{\"type\":\"string\",\"optional\":true},"
        "\"num\":{\"type\":\"string\",\"optional\":true},"
        "\"req\":{\"type\":\"string\",\"required\":true},"
        "\"loose\":{\"type\":\"string\",\"optional\":true},"
        "\"sec\":{\"type\":\"string\",\"optional\":true,\"sensitive\":true},"
        "\"wo\":{\"type\":\"string\",\"optional\":true,\"write_only\":true},"
        "\"old\":{\"type\":\"string\",\"optional\":true,\"deprecated\":true},"
        "\"must\":{\"type\":\"string\",\"required\":true},"
        "\"nest\":{\"nested_type\":{\"attributes\":{\"x\":{\"type\":\"string\",\"optional\":true},"
        "\"y\":{\"type\":\"string\",\"computed\":true}},"
        "\"nesting_mode\":\"set\"},\"optional\":true}},"
        "\"block_types\":{\"rule\":{\"nesting_mode\":\"list\",\"block\":{},\"max_items\":2},"
        "\"grow\":{\"nesting_mode\":\"list\",\"block\":{},\"max_items\":3},"
        "\"mode\":{\"nesting_mode\":\"set\",\"block\":{}},"
        "\"min\":{\"nesting_mode\":\"list\",\"block\":{},\"min_items\":1},"
        "\"extra\":{\"nesting_mode\":\"single\",\"block\":{}}}}},"
        "\"t_new\":{\"version\":0,\"block\":{}}},"
        "\"functions\":{\"f\":{\"return_type\":\"string\",\"parameters\":[{\"name\":\"renamed\","
        "\"type\":\"number\"}]}}}}}";
    size_t n = 0;
    char *s = schema_summary(a, b, 0, &n);
    CHECK_STR_EQ(s, "resource t_a  schema version changed;"
                    "resource t_a .gone attribute removed !;"
                    "resource t_a .num type changed !;"
                    "resource t_a .req mode changed !;"
                    "resource t_a .loose mode changed;"
                    "resource t_a .sec became sensitive;"
                    "resource t_a .wo became write-only !;"
                    "resource t_a .old deprecated;"
                    "resource t_a .nest nesting mode changed !;"
                    "resource t_a .nest.y attribute added;"
                    "resource t_a .must attribute added !;"
                    "resource t_a .rule max_items changed !;"
                    "resource t_a .grow max_items changed;"
                    "resource t_a .mode nesting mode changed !;"
                    "resource t_a .min min_items changed !;"
                    "resource t_a .extra block added;"
                    "resource t_removed  removed !;"
                    "resource t_new  added;"
                    "function f  parameters changed !");
    CHECK_INT_EQ(n, 19);
    free(s);
    s = schema_summary(a, b, 1, &n);
    CHECK_INT_EQ(n, 11);
    CHECK(strstr(s, "t_new") == NULL && strstr(s, ".loose") == NULL);
    free(s);
    s = schema_summary(a, a, 0, &n);
    CHECK_STR_EQ(s, "");
    CHECK_INT_EQ(n, 0);
    free(s);
    /* Not a schema document. */
    analysis_schema_diff *d = NULL;
    CHECK_INT_EQ(analysis_schema_diff_new("[1]", 3, a, strlen(a), &d), TFTAP_EDECODE);
    CHECK(d == NULL);
    tftap_buf e = TFTAP_BUF_INIT, addr = TFTAP_BUF_INIT;
    CHECK_INT_EQ(analysis_schema_entry(a, strlen(a), "x/t", &e, &addr), 0);
    CHECK_STR_EQ(tftap_buf_cstr(&addr), "r/x/t");
    CHECK_INT_EQ(analysis_schema_entry(a, strlen(a), "y/t", &e, &addr), TFTAP_ENOTFOUND);
    tftap_buf_done(&e);
    tftap_buf_done(&addr);
}

int main(void)
{
    test_random_prior_is_input();
    test_provider_choices();
    test_nested_and_lists();
    test_replace_and_diagnostics();
    test_pairing();
    test_named_with_unnamed();
    test_status_private_deferred_version();
    test_errors_and_formats();
    test_streamed();
    test_unnamed_alike();
    test_schema_diff();
    return check_report("test_diff");
}
