/* analysis: two recorded acceptance test suites compared step by step
 * (tftap diff SUITE_A SUITE_B; docs/acceptance-tests.md). Each suite's step
 * runs are keyed by test, step, CLI subcommand and their order among equal
 * keys; each pair is a run diff (analysis_diff_runs). */
#include "analysis/analysis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One step run of a suite. */
struct step_run {
    int64_t id;
    char *test; /* "" when the harness did not say */
    int step;
    char *sub; /* the CLI subcommand, "" when none */
    int nth;   /* among the suite's runs of the same test, step and subcommand */
    int failed;
    int paired;
};

struct suite {
    struct step_run *v;
    size_t n, cap;
};

struct pair {
    const struct step_run *a, *b;
    analysis_diff *d;
};

struct analysis_suite_diff {
    struct suite sa, sb;
    struct pair *pairs;
    size_t npairs;
    size_t differing; /* pairs with a behaviour difference */
    size_t unpaired;  /* step runs in one suite only */
    size_t tests_apart;
    size_t failed_apart; /* steps failed in one suite only */
};

static void suite_done(struct suite *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].test);
        free(s->v[i].sub);
    }
    free(s->v);
}

char *analysis_args_subcommand(const char *args_json)
{
    sj_doc *doc = NULL;
    char *w = NULL;
    if (args_json == NULL || sj_parse(args_json, strlen(args_json), 0, &doc) != 0)
        return strdup("");
    const sj_node *a = sj_root(doc);
    for (const sj_node *e = a->kind == SJ_ARRAY ? a->child : NULL; e; e = e->next)
        if (e->kind == SJ_STRING && e->str[0] != '-') {
            w = strdup(e->str);
            break;
        }
    sj_free(doc);
    return w != NULL ? w : strdup("");
}

static int same_key(const struct step_run *x, const struct step_run *y)
{
    return x->step == y->step && strcmp(x->test, y->test) == 0 && strcmp(x->sub, y->sub) == 0;
}

static int add_run(void *ctx, const store_run_row *r)
{
    struct suite *s = ctx;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        struct step_run *v = realloc(s->v, cap * sizeof *v);
        if (v == NULL)
            return TFTAP_ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    struct step_run *e = &s->v[s->n];
    memset(e, 0, sizeof *e);
    e->id = r->id;
    e->test = strdup(r->test_name ? r->test_name : "");
    e->step = r->test_step;
    e->sub = analysis_args_subcommand(r->args_json);
    if (e->test == NULL || e->sub == NULL) {
        free(e->test);
        free(e->sub);
        return TFTAP_ENOMEM;
    }
    /* What the CLI calls failing: an error exit, not plan -detailed-exitcode's 2. */
    e->failed = r->has_exit_code && r->exit_code != 0 &&
                !(r->exit_code == 2 && strcmp(e->sub, "plan") == 0);
    for (size_t i = 0; i < s->n; i++)
        if (same_key(&s->v[i], e))
            e->nth++;
    s->n++;
    return 0;
}

/* 1 when a step (test, step) of s failed in some run. */
static int step_failed(const struct suite *s, const char *test, int step)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].failed && s->v[i].step == step && strcmp(s->v[i].test, test) == 0)
            return 1;
    return 0;
}

static int has_test(const struct suite *s, const char *test)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i].test, test) == 0)
            return 1;
    return 0;
}

int analysis_suite_diff_runs(store *sa, int64_t suite_a, store *sb, int64_t suite_b,
                             const analysis_diff_opts *opts, analysis_suite_diff **out)
{
    analysis_suite_diff *d = calloc(1, sizeof *d);
    int rc;
    *out = NULL;
    if (d == NULL)
        return TFTAP_ENOMEM;
    if ((rc = store_run_children_each(sa, suite_a, add_run, &d->sa)) != 0 ||
        (rc = store_run_children_each(sb, suite_b, add_run, &d->sb)) != 0) {
        rc = rc == TFTAP_ENOMEM ? rc : TFTAP_ESTORE;
        goto fail;
    }
    d->pairs = calloc(d->sa.n + 1, sizeof *d->pairs);
    if (d->pairs == NULL) {
        rc = TFTAP_ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < d->sa.n; i++) {
        struct step_run *a = &d->sa.v[i];
        for (size_t j = 0; j < d->sb.n; j++) {
            struct step_run *b = &d->sb.v[j];
            if (b->paired || !same_key(a, b) || a->nth != b->nth)
                continue;
            a->paired = b->paired = 1;
            struct pair *p = &d->pairs[d->npairs++];
            p->a = a;
            p->b = b;
            if ((rc = analysis_diff_runs(sa, a->id, sb, b->id, opts, &p->d)) != 0)
                goto fail;
            if (analysis_diff_count(p->d) > 0)
                d->differing++;
            break;
        }
    }
    for (int side = 0; side < 2; side++) {
        const struct suite *s = side ? &d->sb : &d->sa, *o = side ? &d->sa : &d->sb;
        for (size_t i = 0; i < s->n; i++) {
            const struct step_run *r = &s->v[i];
            d->unpaired += !r->paired;
            int first_of_test = 1, first_of_step = 1;
            for (size_t k = 0; k < i; k++) {
                if (strcmp(s->v[k].test, r->test) == 0) {
                    first_of_test = 0;
                    if (s->v[k].step == r->step)
                        first_of_step = 0;
                }
            }
            if (first_of_test && !has_test(o, r->test))
                d->tests_apart++;
            if (first_of_step && step_failed(s, r->test, r->step) &&
                !step_failed(o, r->test, r->step) && has_test(o, r->test))
                d->failed_apart++;
        }
    }
    *out = d;
    return 0;
fail:
    analysis_suite_diff_free(d);
    return rc;
}

size_t analysis_suite_diff_count(const analysis_suite_diff *d)
{
    return d->differing + d->unpaired + d->failed_apart;
}

void analysis_suite_diff_free(analysis_suite_diff *d)
{
    if (d == NULL)
        return;
    for (size_t i = 0; i < d->npairs; i++)
        analysis_diff_free(d->pairs[i].d);
    free(d->pairs);
    suite_done(&d->sa);
    suite_done(&d->sb);
    free(d);
}

static void step_label(tftap_buf *b, const struct step_run *r)
{
    tftap_buf_printf(b, "%s / step ", r->test[0] ? r->test : "(test not known)");
    if (r->step > 0)
        tftap_buf_printf(b, "%d", r->step);
    else
        tftap_buf_putc(b, '?');
    tftap_buf_printf(b, " / %s", r->sub[0] ? r->sub : "-");
    if (r->nth > 0)
        tftap_buf_printf(b, " #%d", r->nth + 1);
}

/* Each line of text (len bytes) into out with indent before it. */
static void indented(tftap_buf *out, const char *indent, const char *text, size_t len)
{
    size_t i = 0;
    while (i < len) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
        if (n > 0)
            tftap_buf_puts(out, indent);
        tftap_buf_append(out, text + i, n);
        tftap_buf_putc(out, '\n');
        i += n + 1;
    }
}

/* The tests of both suites in first-seen order (a's, then b's own). */
static size_t tests_of(const analysis_suite_diff *d, const char ***out)
{
    size_t n = 0, cap = d->sa.n + d->sb.n + 1;
    const char **v = malloc(cap * sizeof *v);
    if (v == NULL)
        return 0;
    for (int side = 0; side < 2; side++) {
        const struct suite *s = side ? &d->sb : &d->sa;
        for (size_t i = 0; i < s->n; i++) {
            size_t k = 0;
            while (k < n && strcmp(v[k], s->v[i].test) != 0)
                k++;
            if (k == n)
                v[n++] = s->v[i].test;
        }
    }
    *out = v;
    return n;
}

struct test_sum {
    size_t pairs, differing, only_a, only_b;
    int failed_a, failed_b;
};

static void sum_test(const analysis_suite_diff *d, const char *test, struct test_sum *t)
{
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < d->npairs; i++)
        if (strcmp(d->pairs[i].a->test, test) == 0) {
            t->pairs++;
            t->differing += analysis_diff_count(d->pairs[i].d) > 0;
        }
    for (size_t i = 0; i < d->sa.n; i++)
        if (strcmp(d->sa.v[i].test, test) == 0) {
            t->only_a += !d->sa.v[i].paired;
            t->failed_a |= d->sa.v[i].failed;
        }
    for (size_t i = 0; i < d->sb.n; i++)
        if (strcmp(d->sb.v[i].test, test) == 0) {
            t->only_b += !d->sb.v[i].paired;
            t->failed_b |= d->sb.v[i].failed;
        }
}

/* Steps of test that failed in one suite only, as "N (A)" / "N (B)". */
static void failed_apart_text(const analysis_suite_diff *d, const char *test, tftap_buf *b)
{
    int first = 1;
    for (int side = 0; side < 2; side++) {
        const struct suite *s = side ? &d->sb : &d->sa, *o = side ? &d->sa : &d->sb;
        for (size_t i = 0; i < s->n; i++) {
            const struct step_run *r = &s->v[i];
            if (strcmp(r->test, test) != 0 || !r->failed || step_failed(o, test, r->step) ||
                !has_test(o, test))
                continue;
            int seen = 0;
            for (size_t k = 0; k < i && !seen; k++)
                seen = s->v[k].failed && s->v[k].step == r->step && strcmp(s->v[k].test, test) == 0;
            if (seen)
                continue;
            tftap_buf_printf(b, "%sstep %d failed in %s only", first ? "" : ", ", r->step,
                             side ? "B" : "A");
            first = 0;
        }
    }
}

static void render_text(const analysis_suite_diff *d, int flags, tftap_buf *out)
{
    const char **tests = NULL;
    size_t nt = tests_of(d, &tests);
    for (size_t t = 0; t < nt; t++) {
        struct test_sum s;
        sum_test(d, tests[t], &s);
        const char *name = tests[t][0] ? tests[t] : "(test not known)";
        if (s.pairs == 0 && s.only_b == 0) {
            tftap_buf_printf(out, "%s: only in A\n", name);
            continue;
        }
        if (s.pairs == 0 && s.only_a == 0) {
            tftap_buf_printf(out, "%s: only in B\n", name);
            continue;
        }
        tftap_buf_printf(out, "%s: %zu of %zu step runs differ", name, s.differing, s.pairs);
        if (s.only_a || s.only_b)
            tftap_buf_printf(out, "; %zu only in A, %zu only in B", s.only_a, s.only_b);
        tftap_buf f = TFTAP_BUF_INIT;
        failed_apart_text(d, tests[t], &f);
        if (f.len)
            tftap_buf_printf(out, "; %s", tftap_buf_cstr(&f));
        tftap_buf_done(&f);
        tftap_buf_putc(out, '\n');
        for (size_t i = 0; i < d->npairs; i++) {
            const struct pair *p = &d->pairs[i];
            if (strcmp(p->a->test, tests[t]) != 0 || analysis_diff_count(p->d) == 0)
                continue;
            tftap_buf_puts(out, "  ");
            step_label(out, p->a);
            tftap_buf_printf(out, " (runs %lld and %lld):\n", (long long)p->a->id,
                             (long long)p->b->id);
            tftap_buf r = TFTAP_BUF_INIT;
            analysis_diff_render(p->d, ANALYSIS_DIFF_TEXT, flags, 0, &r);
            indented(out, "    ", r.data ? r.data : "", r.len);
            tftap_buf_done(&r);
        }
        for (int side = 0; side < 2; side++) {
            const struct suite *su = side ? &d->sb : &d->sa;
            for (size_t i = 0; i < su->n; i++)
                if (!su->v[i].paired && strcmp(su->v[i].test, tests[t]) == 0) {
                    tftap_buf_puts(out, "  ");
                    step_label(out, &su->v[i]);
                    tftap_buf_printf(out, ": only in %s (run %lld)\n", side ? "B" : "A",
                                     (long long)su->v[i].id);
                }
        }
    }
    tftap_buf_printf(out,
                     "%zu step runs compared, %zu differ; %zu only in one suite; %zu "
                     "test(s) in one suite only; %zu step(s) failed in one only\n",
                     d->npairs, d->differing, d->unpaired, d->tests_apart, d->failed_apart);
    free(tests);
}

static void render_markdown(const analysis_suite_diff *d, int flags, size_t max_bytes,
                            tftap_buf *out)
{
    const char **tests = NULL;
    size_t nt = tests_of(d, &tests);
    tftap_buf_printf(out, "### tftap: acceptance tests compared\n\n%s\n\n",
                     analysis_suite_diff_count(d) ? "The provider behaved differently."
                                                  : "The provider behaved the same.");
    tftap_buf_puts(out, "| test | step runs compared | differing | only in A | only in B | "
                        "failed |\n|---|---:|---:|---:|---:|---|\n");
    for (size_t t = 0; t < nt; t++) {
        struct test_sum s;
        sum_test(d, tests[t], &s);
        tftap_buf f = TFTAP_BUF_INIT;
        failed_apart_text(d, tests[t], &f);
        tftap_buf_printf(out, "| `%s` | %zu | %zu | %zu | %zu | %s |\n",
                         tests[t][0] ? tests[t] : "(test not known)", s.pairs, s.differing,
                         s.only_a, s.only_b, f.len ? tftap_buf_cstr(&f) : "");
        tftap_buf_done(&f);
    }
    tftap_buf_putc(out, '\n');
    size_t left_out = 0;
    for (size_t t = 0; t < nt; t++) {
        struct test_sum s;
        sum_test(d, tests[t], &s);
        if (s.differing == 0 && s.only_a == 0 && s.only_b == 0)
            continue;
        tftap_buf section = TFTAP_BUF_INIT;
        tftap_buf_printf(&section,
                         "<details><summary><code>%s</code>: %zu step run(s) differ"
                         "</summary>\n\n",
                         tests[t][0] ? tests[t] : "(test not known)", s.differing);
        for (size_t i = 0; i < d->npairs; i++) {
            const struct pair *p = &d->pairs[i];
            if (strcmp(p->a->test, tests[t]) != 0 || analysis_diff_count(p->d) == 0)
                continue;
            tftap_buf_puts(&section, "#### ");
            step_label(&section, p->a);
            tftap_buf_puts(&section, "\n\n```\n");
            analysis_diff_render(p->d, ANALYSIS_DIFF_TEXT, flags & ~ANALYSIS_DIFF_COLOR, 0,
                                 &section);
            tftap_buf_puts(&section, "```\n\n");
        }
        for (int side = 0; side < 2; side++) {
            const struct suite *su = side ? &d->sb : &d->sa;
            for (size_t i = 0; i < su->n; i++)
                if (!su->v[i].paired && strcmp(su->v[i].test, tests[t]) == 0) {
                    tftap_buf_puts(&section, "- ");
                    step_label(&section, &su->v[i]);
                    tftap_buf_printf(&section, ": only in %s\n", side ? "B" : "A");
                }
        }
        tftap_buf_puts(&section, "\n</details>\n\n");
        if (max_bytes > 0 && out->len + section.len > max_bytes)
            left_out++;
        else
            tftap_buf_append(out, section.data, section.len);
        tftap_buf_done(&section);
    }
    if (left_out)
        tftap_buf_printf(out,
                         "_%zu test(s) left out to keep this comment short; run "
                         "`tftap diff` for the whole report._\n",
                         left_out);
    free(tests);
}

static void json_step(tftap_buf *b, const struct step_run *r)
{
    tftap_buf_puts(b, "{\"test\":");
    tftap_buf_json_string(b, r->test, strlen(r->test));
    tftap_buf_printf(b, ",\"step\":%d,\"command\":", r->step);
    tftap_buf_json_string(b, r->sub, strlen(r->sub));
    tftap_buf_printf(b, ",\"nth\":%d,\"run\":%lld,\"failed\":%s}", r->nth + 1, (long long)r->id,
                     r->failed ? "true" : "false");
}

static void render_json(const analysis_suite_diff *d, int flags, tftap_buf *out)
{
    tftap_buf_printf(out, "{\"same\":%s,\"pairs\":[",
                     analysis_suite_diff_count(d) ? "false" : "true");
    for (size_t i = 0; i < d->npairs; i++) {
        const struct pair *p = &d->pairs[i];
        tftap_buf_puts(out, i ? ",{\"a\":" : "{\"a\":");
        json_step(out, p->a);
        tftap_buf_puts(out, ",\"b\":");
        json_step(out, p->b);
        tftap_buf_printf(out, ",\"differences\":%zu,\"diff\":", analysis_diff_count(p->d));
        tftap_buf r = TFTAP_BUF_INIT;
        analysis_diff_render(p->d, ANALYSIS_DIFF_JSON, flags & ~ANALYSIS_DIFF_COLOR, 0, &r);
        while (r.len > 0 && r.data[r.len - 1] == '\n')
            r.len--;
        tftap_buf_append(out, r.data ? r.data : "null", r.len ? r.len : 4);
        tftap_buf_done(&r);
        tftap_buf_putc(out, '}');
    }
    for (int side = 0; side < 2; side++) {
        const struct suite *s = side ? &d->sb : &d->sa;
        tftap_buf_puts(out, side ? "],\"only_b\":[" : "],\"only_a\":[");
        int first = 1;
        for (size_t i = 0; i < s->n; i++)
            if (!s->v[i].paired) {
                if (!first)
                    tftap_buf_putc(out, ',');
                first = 0;
                json_step(out, &s->v[i]);
            }
    }
    tftap_buf_printf(out, "],\"tests_in_one_only\":%zu,\"steps_failed_in_one_only\":%zu}\n",
                     d->tests_apart, d->failed_apart);
}

int analysis_suite_diff_render(const analysis_suite_diff *d, enum analysis_diff_format fmt,
                               int flags, size_t max_bytes, tftap_buf *out)
{
    if (fmt == ANALYSIS_DIFF_MARKDOWN)
        render_markdown(d, flags, max_bytes, out);
    else if (fmt == ANALYSIS_DIFF_JSON)
        render_json(d, flags, out);
    else
        render_text(d, flags, out);
    return tftap_buf_failed(out) ? TFTAP_ENOMEM : 0;
}
