/* Contract checks over hand-written decoded values: each rule's finding, its
 * path and verdict, and the answers that must pass. */
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "tests/check.h"

static const char schema[] =
    "{\"version\":0,\"attributes\":["
    "{\"name\":\"id\",\"type\":\"string\",\"computed\":true},"
    "{\"name\":\"value\",\"type\":\"string\",\"optional\":true},"
    "{\"name\":\"computed\",\"type\":\"string\",\"computed\":true},"
    "{\"name\":\"size\",\"type\":\"number\",\"computed\":true},"
    "{\"name\":\"opt_comp\",\"type\":\"string\",\"optional\":true,\"computed\":true},"
    "{\"name\":\"secret\",\"type\":\"string\",\"optional\":true,\"sensitive\":true},"
    "{\"name\":\"wo\",\"type\":\"string\",\"optional\":true,\"write_only\":true},"
    "{\"name\":\"tags\",\"type\":[\"map\",\"string\"],\"optional\":true},"
    "{\"name\":\"list\",\"type\":[\"list\",\"string\"],\"optional\":true},"
    "{\"name\":\"set\",\"type\":[\"set\",\"string\"],\"optional\":true},"
    "{\"name\":\"dyn\",\"type\":\"dynamic\",\"optional\":true},"
    "{\"name\":\"nested\",\"type\":null,\"nested_type\":{\"nesting\":\"LIST\",\"attributes\":["
    "{\"name\":\"n\",\"type\":\"string\",\"optional\":true}]},\"optional\":true}"
    "],\"block_types\":["
    "{\"type_name\":\"item\",\"nesting\":\"LIST\",\"block\":{\"attributes\":["
    "{\"name\":\"name\",\"type\":\"string\",\"optional\":true}]}},"
    "{\"type_name\":\"rule\",\"nesting\":\"SET\",\"block\":{\"attributes\":["
    "{\"name\":\"port\",\"type\":\"number\",\"optional\":true}]}}]}";

/* An object of this schema: every attribute null except those given. */
static char *obj(const char *members)
{
    static const char *names[] = {"id",     "value",  "computed", "size", "opt_comp",
                                  "secret", "wo",     "tags",     "list", "set",
                                  "dyn",    "nested", "item",     "rule"};
    size_t cap = 4096 + strlen(members);
    char *s = malloc(cap);
    size_t n = 0;
    n += (size_t)snprintf(s + n, cap - n, "{%s", members);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char key[32];
        snprintf(key, sizeof key, "\"%s\":", names[i]);
        if (!strstr(members, key)) {
            const char *empty =
                strcmp(names[i], "item") == 0 || strcmp(names[i], "rule") == 0 ? "[]" : "null";
            n += (size_t)snprintf(s + n, cap - n, "%s%s%s", n > 1 ? "," : "", key, empty);
        }
    }
    snprintf(s + n, cap - n, "}");
    return s;
}

/* "rule@path:verdict" lines of the findings. */
static char *summary(const analysis_findings *f)
{
    tftap_buf b = TFTAP_BUF_INIT;
    for (size_t i = 0; i < f->n; i++)
        tftap_buf_printf(&b, "%s%s@%s:%s", i ? " " : "", f->v[i].rule, f->v[i].path,
                         analysis_verdict_name(f->v[i].verdict));
    char *s = strdup(tftap_buf_cstr(&b));
    tftap_buf_done(&b);
    return s;
}

struct call {
    const char *rpc;
    const char *prior, *config, *planned, *new_state, *rr;
    int legacy;
};

static char *check(struct call c, analysis_findings *keep)
{
    analysis_call ac = {.call_id = 7,
                        .rpc = c.rpc,
                        .type_name = "t_thing",
                        .address = "t_thing.a",
                        .block_schema = schema,
                        .prior = c.prior,
                        .config = c.config,
                        .planned = c.planned,
                        .new_state = c.new_state,
                        .requires_replace = c.rr,
                        .legacy = c.legacy};
    analysis_findings f = ANALYSIS_FINDINGS_INIT;
    int rc = analysis_check_call(&ac, &f);
    CHECK_INT_EQ(rc, 0);
    char *s = summary(&f);
    if (keep)
        *keep = f;
    else
        analysis_findings_done(&f);
    return s;
}

#define EXPECT(call, want)                                                                         \
    do {                                                                                           \
        char *got_ = check(call, NULL);                                                            \
        CHECK_STR_EQ(got_, want);                                                                  \
        free(got_);                                                                                \
    } while (0)

static struct call plan(const char *prior, const char *config, const char *planned)
{
    return (struct call){"PlanResourceChange", prior, config, planned, NULL, NULL, 0};
}

static struct call apply(const char *planned, const char *nw)
{
    return (struct call){"ApplyResourceChange", NULL, NULL, planned, nw, NULL, 0};
}

static void test_plan(void)
{
    char *cfg = obj("\"value\":\"a\",\"list\":[\"x\"],\"item\":[{\"name\":\"n\"}]");
    char *ok = obj("\"value\":\"a\",\"list\":[\"x\"],\"item\":[{\"name\":\"n\"}],"
                   "\"id\":{\"$unknown\":{}},\"computed\":{\"$unknown\":{\"prefix\":\"id-\"}},"
                   "\"opt_comp\":\"dflt\"");
    EXPECT(plan(NULL, cfg, ok), "");

    char *changed = obj("\"value\":\"b\",\"list\":[\"x\"],\"item\":[{\"name\":\"n\"}]");
    EXPECT(plan(NULL, cfg, changed), "plan-valid@.value:rejects");
    struct call legacy = plan(NULL, cfg, changed);
    legacy.legacy = 1;
    EXPECT(legacy, "plan-valid@.value:tolerates");

    /* A value kept from the prior state stands for an equivalent config. */
    char *prior = obj("\"value\":\"b\",\"list\":[\"x\"],\"item\":[{\"name\":\"n\"}],\"id\":\"1\"");
    char *keep = obj("\"value\":\"b\",\"list\":[\"x\"],\"item\":[{\"name\":\"n\"}],\"id\":\"1\"");
    EXPECT(plan(prior, cfg, keep), "");

    char *unk = obj("\"value\":{\"$unknown\":{}},\"list\":[\"x\"],\"item\":[{\"name\":\"n\"}]");
    EXPECT(plan(NULL, cfg, unk), "plan-valid@.value:rejects");
    /* Refinements are ignored when comparing with config. */
    char *cfg_unk = obj("\"value\":{\"$unknown\":{}},\"list\":[\"x\"],\"item\":[{\"name\":\"n\"}]");
    char *unk_ref = obj(
        "\"value\":{\"$unknown\":{\"null\":false}},\"list\":[\"x\"],\"item\":[{\"name\":\"n\"}]");
    EXPECT(plan(NULL, cfg_unk, unk_ref), "");

    char *extra = obj("\"value\":\"a\",\"list\":[\"x\"],\"item\":[{\"name\":\"n\"}],"
                      "\"tags\":{\"k\":\"v\"}");
    EXPECT(plan(NULL, cfg, extra), "plan-valid@.tags:rejects");

    char *blocks =
        obj("\"value\":\"a\",\"list\":[\"x\"],\"item\":[{\"name\":\"n\"},{\"name\":\"m\"}]");
    EXPECT(plan(NULL, cfg, blocks), "plan-valid@.item:rejects");
    char *inblock = obj("\"value\":\"a\",\"list\":[\"x\"],\"item\":[{\"name\":\"z\"}]");
    EXPECT(plan(NULL, cfg, inblock), "plan-valid@.item[0].name:rejects");
    char *nullblocks = obj("\"value\":\"a\",\"list\":[\"x\"],\"item\":null");
    EXPECT(plan(NULL, cfg, nullblocks), "plan-valid@.item:rejects");

    /* Nested attributes (protocol 6) and sets compare element-wise. */
    char *ncfg = obj("\"nested\":[{\"n\":\"a\"}],\"set\":[\"p\",\"q\"]");
    char *nok = obj("\"nested\":[{\"n\":\"a\"}],\"set\":[\"q\",\"p\"]");
    EXPECT(plan(NULL, ncfg, nok), "");
    char *nbad = obj("\"nested\":[{\"n\":\"b\"}],\"set\":[\"q\",\"p\"]");
    EXPECT(plan(NULL, ncfg, nbad), "plan-valid@.nested[0].n:rejects");
    char *nunk = obj("\"nested\":{\"$unknown\":{}},\"set\":[\"q\",\"p\"]");
    EXPECT(plan(NULL, ncfg, nunk), "plan-valid@.nested:rejects");

    /* Sensitive values: equal hashes are equal. */
    char *scfg = obj("\"secret\":{\"$sensitive\":\"hmac-sha256:aa\"}");
    char *sok = obj("\"secret\":{\"$sensitive\":\"hmac-sha256:aa\"}");
    char *sbad = obj("\"secret\":{\"$sensitive\":\"hmac-sha256:bb\"}");
    EXPECT(plan(NULL, scfg, sok), "");
    EXPECT(plan(NULL, scfg, sbad), "plan-valid@.secret:rejects");

    /* Write-only: planned null is right, a value is not (Terraform). */
    char *wcfg = obj("\"wo\":{\"$sensitive\":\"hmac-sha256:cc\"}");
    char *wnull = obj("");
    EXPECT(plan(NULL, wcfg, wnull), "");
    EXPECT(plan(NULL, wcfg, wcfg), "write-only-null@.wo:rejects");

    /* Destroy plans. */
    EXPECT(plan(prior, NULL, "null"), "");
    EXPECT(plan(prior, NULL, prior), "plan-destroy-null@:rejects");

    /* requires_replace paths must exist in prior or planned. */
    struct call rr = plan(prior, cfg, ok);
    rr.rr = "[{\"path\":\".value\",\"steps\":[{\"attribute_name\":\"value\"}]},"
            "{\"path\":\".list[0]\",\"steps\":[{\"attribute_name\":\"list\"},"
            "{\"element_key_int\":0}]}]";
    EXPECT(rr, "");
    rr.rr = "[{\"path\":\".nope\",\"steps\":[{\"attribute_name\":\"nope\"}]},"
            "{\"path\":\".list[3]\",\"steps\":[{\"attribute_name\":\"list\"},"
            "{\"element_key_int\":3}]}]";
    rr.planned = keep;
    EXPECT(rr, "plan-requires-replace@.nope:rejects plan-requires-replace@.list[3]:rejects");
    /* A create (no prior) is not judged on requires_replace. */
    rr.prior = NULL;
    rr.planned = ok;
    EXPECT(rr, "");

    free(cfg), free(ok), free(changed), free(prior), free(keep), free(unk), free(cfg_unk);
    free(unk_ref), free(extra), free(blocks), free(inblock), free(nullblocks), free(ncfg);
    free(nok), free(nbad), free(nunk), free(scfg), free(sok), free(sbad), free(wcfg), free(wnull);
}

static void test_apply(void)
{
    char *planned = obj("\"value\":\"a\",\"list\":[\"x\"],\"set\":[\"s\"],\"tags\":{\"k\":\"v\"},"
                        "\"id\":{\"$unknown\":{}},\"computed\":{\"$unknown\":{\"prefix\":\"id-\"}},"
                        "\"size\":{\"$unknown\":{\"lower\":[0,true],\"upper\":[10,false]}},"
                        "\"item\":[{\"name\":\"n\"}],\"rule\":[{\"port\":1}]");
    char *good = obj("\"value\":\"a\",\"list\":[\"x\"],\"set\":[\"s\"],\"tags\":{\"k\":\"v\"},"
                     "\"id\":\"1\",\"computed\":\"id-9\",\"size\":0,"
                     "\"item\":[{\"name\":\"n\"}],\"rule\":[{\"port\":1}]");
    EXPECT(apply(planned, good), "");

    char *changed = obj("\"value\":\"b\",\"list\":[\"x\"],\"set\":[\"s\"],\"tags\":{\"k\":\"v\"},"
                        "\"id\":\"1\",\"computed\":\"id-9\",\"size\":0,"
                        "\"item\":[{\"name\":\"n\"}],\"rule\":[{\"port\":1}]");
    EXPECT(apply(planned, changed), "apply-compatible@.value:rejects");
    struct call legacy = apply(planned, changed);
    legacy.legacy = 1;
    EXPECT(legacy, "apply-compatible@.value:tolerates");

    char *refs = obj("\"value\":\"a\",\"list\":[\"x\"],\"set\":[\"s\"],\"tags\":{\"k\":\"v\"},"
                     "\"id\":\"1\",\"computed\":\"xyz\",\"size\":10,"
                     "\"item\":[{\"name\":\"n\"}],\"rule\":[{\"port\":1}]");
    EXPECT(apply(planned, refs),
           "apply-compatible@.computed:rejects apply-compatible@.size:rejects");

    char *grown = obj("\"value\":\"a\",\"list\":[\"x\",\"y\"],\"set\":[\"s\",\"t\"],"
                      "\"tags\":{\"k\":\"v\",\"a b\":\"w\"},"
                      "\"id\":\"1\",\"computed\":\"id-9\",\"size\":0,"
                      "\"item\":[{\"name\":\"n\"}],\"rule\":[{\"port\":1},{\"port\":2}]");
    EXPECT(apply(planned, grown), "apply-compatible@.tags:rejects apply-compatible@.list:rejects "
                                  "apply-compatible@.set:rejects apply-compatible@.set:rejects "
                                  "apply-compatible@.rule:rejects apply-compatible@.rule:rejects");

    char *unk = obj("\"value\":\"a\",\"list\":[\"x\"],\"set\":[\"s\"],\"tags\":{\"k\":\"v\"},"
                    "\"id\":\"1\",\"computed\":{\"$unknown\":{}},\"size\":0,"
                    "\"item\":[{\"name\":{\"$unknown\":{}}}],\"rule\":[{\"port\":1}]");
    EXPECT(apply(planned, unk), "apply-known@.computed:rejects apply-known@.item[0].name:rejects");

    char *nulled = obj("\"list\":[\"x\"],\"set\":[\"s\"],\"tags\":{\"k\":\"v\"},"
                       "\"id\":\"1\",\"computed\":\"id-9\",\"size\":0,"
                       "\"item\":[{\"name\":\"n\"}],\"rule\":[{\"port\":1}]");
    EXPECT(apply(planned, nulled), "apply-compatible@.value:rejects");

    EXPECT(apply(planned, "null"), "apply-compatible@:rejects");
    legacy = apply(planned, "null");
    legacy.legacy = 1;
    EXPECT(legacy, "apply-compatible@:tolerates apply-not-null@:rejects");
    EXPECT(apply("null", "null"), "");
    EXPECT(apply("null", good), "apply-delete-null@:rejects");

    /* A sensitive attribute's mismatch is reported once, values withheld. */
    char *sp = obj("\"secret\":{\"$sensitive\":\"hmac-sha256:aa\"}");
    char *sn = obj("\"secret\":{\"$sensitive\":\"hmac-sha256:bb\"}");
    analysis_findings f;
    char *s = check(apply(sp, sn), &f);
    CHECK_STR_EQ(s, "apply-compatible@.secret:rejects");
    CHECK(f.n == 1 && !f.v[0].expected && !f.v[0].actual);
    analysis_findings_done(&f);
    free(s);
    EXPECT(apply(sp, sp), "");

    /* Terraform: a resource identity is known after apply and refresh. */
    analysis_call ic = {.call_id = 7,
                        .rpc = "ApplyResourceChange",
                        .address = "t_thing.a",
                        .block_schema = schema,
                        .planned = planned,
                        .new_state = good,
                        .identity = "{\"id\":{\"$unknown\":{}},\"region\":\"x\"}"};
    analysis_findings idf = ANALYSIS_FINDINGS_INIT;
    CHECK_INT_EQ(analysis_check_call(&ic, &idf), 0);
    char *ids = summary(&idf);
    CHECK_STR_EQ(ids, "identity-known@.id:rejects");
    free(ids);
    analysis_findings_done(&idf);
    ic.identity = "{\"id\":\"1\",\"region\":\"x\"}";
    CHECK_INT_EQ(analysis_check_call(&ic, &idf), 0);
    CHECK_INT_EQ(idf.n, 0);
    analysis_findings_done(&idf);

    /* Dynamic values: the type may not change. */
    char *d1 = obj("\"dyn\":{\"type\":\"string\",\"value\":\"1\"}");
    char *d2 = obj("\"dyn\":{\"type\":\"number\",\"value\":1}");
    char *d3 = obj("\"dyn\":{\"$unknown\":{}}");
    EXPECT(apply(d1, d2), "apply-compatible@.dyn:rejects");
    EXPECT(apply(d3, d2), "");
    EXPECT(apply(d1, d1), "");

    /* Values stay what they were: the finding carries both JSON texts. */
    s = check(apply(planned, changed), &f);
    CHECK(f.n == 1);
    if (f.n == 1) {
        CHECK_STR_EQ(f.v[0].expected, "\"a\"");
        CHECK_STR_EQ(f.v[0].actual, "\"b\"");
        CHECK_STR_EQ(f.v[0].address, "t_thing.a");
        CHECK_INT_EQ(f.v[0].call_id, 7);
    }
    analysis_findings_done(&f);
    free(s);

    free(planned), free(good), free(changed), free(refs), free(grown), free(unk), free(nulled);
    free(sp), free(sn), free(d1), free(d2), free(d3);
}

static void test_reads_and_final_plan(void)
{
    char *a = obj("\"value\":\"a\",\"id\":\"1\"");
    char *b = obj("\"value\":\"b\",\"id\":\"1\"");
    struct call read = {"ReadResource", a, NULL, NULL, b, NULL, 0};
    analysis_findings f;
    char *s = check(read, &f);
    CHECK_STR_EQ(s, "read-drift@.value:drift");
    CHECK_INT_EQ(analysis_findings_violations(&f), 0);
    analysis_findings_done(&f);
    free(s);
    read.new_state = a;
    EXPECT(read, "");

    struct call data = {"ReadDataSource", NULL, a, NULL, "null", NULL, 0};
    EXPECT(data, "data-not-null@:rejects");
    char *du = obj("\"value\":\"a\",\"id\":{\"$unknown\":{}}");
    data.new_state = du;
    EXPECT(data, "data-known@.id:rejects");
    data.new_state = a;
    EXPECT(data, "");

    char *p1 = obj("\"value\":\"a\",\"id\":{\"$unknown\":{}},\"computed\":\"pid-1\"");
    char *p2 = obj("\"value\":\"a\",\"id\":{\"$unknown\":{}},\"computed\":\"pid-2\"");
    analysis_call first = {.call_id = 3, .planned = p1};
    analysis_call final = {.call_id = 9,
                           .rpc = "PlanResourceChange",
                           .address = "t_thing.a",
                           .block_schema = schema,
                           .planned = p2};
    analysis_findings g = ANALYSIS_FINDINGS_INIT;
    CHECK_INT_EQ(analysis_check_final_plan(&first, &final, &g), 0);
    s = summary(&g);
    CHECK_STR_EQ(s, "final-plan@.computed:rejects");
    CHECK(g.n == 1 && g.v[0].other_call_id == 3 && g.v[0].call_id == 9);
    free(s);
    analysis_findings_done(&g);
    final.planned = p1;
    CHECK_INT_EQ(analysis_check_final_plan(&first, &final, &g), 0);
    CHECK_INT_EQ(g.n, 0);

    /* Malformed JSON and a missing schema are not checkable, not a crash. */
    analysis_call bad = {.call_id = 1,
                         .rpc = "ApplyResourceChange",
                         .block_schema = schema,
                         .planned = "{\"value\":",
                         .new_state = a};
    CHECK_INT_EQ(analysis_check_call(&bad, &g), TFTAP_EDECODE);
    bad.block_schema = NULL;
    CHECK_INT_EQ(analysis_check_call(&bad, &g), 0);
    CHECK_INT_EQ(g.unchecked, 2);
    CHECK_INT_EQ(g.n, 0);
    analysis_findings_done(&g);
    free(a), free(b), free(du), free(p1), free(p2);
}

/* A block whose attributes are named type and value is not a dynamic
 * value; a LIST block holding dynamic values travels as one. */
static void test_dynamic_blocks(void)
{
    static const char sch[] =
        "{\"attributes\":[],\"block_types\":["
        "{\"type_name\":\"tag\",\"nesting\":\"SINGLE\",\"block\":{\"attributes\":["
        "{\"name\":\"type\",\"type\":\"string\",\"optional\":true},"
        "{\"name\":\"value\",\"type\":\"string\",\"optional\":true}]}},"
        "{\"type_name\":\"dl\",\"nesting\":\"LIST\",\"block\":{\"attributes\":["
        "{\"name\":\"d\",\"type\":\"dynamic\",\"optional\":true}]}}]}";
    const char *cfg = "{\"tag\":{\"type\":\"a\",\"value\":\"b\"},"
                      "\"dl\":{\"type\":[\"tuple\",[[\"object\",{\"d\":\"string\"}]]],"
                      "\"value\":[{\"d\":\"x\"}]}}";
    const char *bad = "{\"tag\":{\"type\":\"a\",\"value\":\"c\"},"
                      "\"dl\":{\"type\":[\"tuple\",[[\"object\",{\"d\":\"string\"}]]],"
                      "\"value\":[{\"d\":\"y\"}]}}";
    analysis_call c = {.call_id = 1,
                       .rpc = "PlanResourceChange",
                       .block_schema = sch,
                       .config = cfg,
                       .planned = cfg};
    analysis_findings f = ANALYSIS_FINDINGS_INIT;
    CHECK_INT_EQ(analysis_check_call(&c, &f), 0);
    CHECK_INT_EQ(f.n, 0);
    c.planned = bad;
    CHECK_INT_EQ(analysis_check_call(&c, &f), 0);
    char *s = summary(&f);
    CHECK_STR_EQ(s, "plan-valid@.tag.value:rejects plan-valid@.dl[0].d:rejects");
    free(s);
    analysis_findings_done(&f);
}

int main(void)
{
    test_dynamic_blocks();
    test_plan();
    test_apply();
    test_reads_and_final_plan();
    return check_report("test_check");
}
