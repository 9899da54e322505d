/* tftap show RUN [ADDRESS|TYPE]: the recorded resource changes of a run,
 * rendered the way a plan reads, and the diagnostics providers returned.
 * Calls that failed come first: they are what a post-mortem asks about. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "cli/cli.h"
#include "cli/cli_store.h"
#include "cli/filter.h"
#include "cli/verdict.h"

static const char usage_text[] =
    "usage: tftap show RUN [ADDRESS|TYPE] [--all] [--test PATTERN] [--db PATH] [--json]\n\n"
    "Show each resource instance change recorded in RUN (an id or 'last') as a plan\n"
    "shows it: PlanResourceChange (prior -> planned) and ApplyResourceChange (prior ->\n"
    "new state) calls, then the diagnostics of other calls. Calls that failed (error\n"
    "diagnostics, a failing gRPC status, or no answer) come first, each with what it\n"
    "attempted and the provider's diagnostics; an expected close (go-plugin's streams\n"
    "and Shutdown ending as a provider exits, UNIMPLEMENTED from a method a provider\n"
    "may lack) is not a failure. A plan that an apply in\n"
    "the same run carried out is shown once, as the apply; an apply's destroy and\n"
    "create of one address read as one replacement (-/+). ADDRESS (test_thing.a, also\n"
    "matching its instances; module.m, module.m[0], module.m.test_thing.a) or TYPE\n"
    "(test_thing) keeps only those. --all also shows no-op changes, superseded plans,\n"
    "ReadResource and ReadDataSource calls. A change whose call could not be tied to\n"
    "an address says why. With --test PATTERN, RUN is an acceptance test suite (the run of\n"
    "'tftap run -- go test ...') and each step run of the tests whose name matches PATTERN\n"
    "(a shell glob) is shown in turn under its name, TEST / step N / COMMAND (--json: an\n"
    "array of the runs' reports).\n";

struct show_ctx {
    tftap_buf out;
    int json, all, color;
    int n, unmatched, skipped;
    int counts[ANALYSIS_ACTION_READ + 1];
    int err;
    const char *filter;
    /* Failed calls shown first, in call id order: the other sections skip
     * them. */
    int64_t *failed;
    size_t nfailed, failed_cap;
    int nfailed_changes;        /* of which resource changes */
    int failed_pass;            /* listing the failed changes */
    int blocks;                 /* text: changes and failures printed, for blank lines */
    int64_t *shown;             /* failed changes shown, in call id order once sorted */
    const cli_verdict *verdict; /* the run's: which answers core rejects */
    int rejected_shown;         /* changes shown first for an answer core rejects */
    /* Text: the changes after the failures, printed once all are read, in
     * the order of their addresses as a plan is (calls come in any order
     * when the CLI works in parallel). */
    struct block *pending;
    size_t npending, pending_cap;
    size_t nshown;
};

static int is_change_rpc(const char *rpc)
{
    return rpc &&
           (strcmp(rpc, "PlanResourceChange") == 0 || strcmp(rpc, "ApplyResourceChange") == 0 ||
            strcmp(rpc, "ReadResource") == 0 || strcmp(rpc, "ReadDataSource") == 0);
}

/* The ADDRESS|TYPE operand as the store's queries apply it. */
struct block {
    char *address; /* NULL: not matched, after the others in call order */
    int64_t call_id;
    char *text;
    size_t len;
};

static int cmp_block(const void *pa, const void *pb)
{
    const struct block *a = pa, *b = pb;
    if (!a->address != !b->address)
        return a->address ? -1 : 1;
    int c = a->address ? analysis_address_cmp(a->address, b->address) : 0;
    return c ? c : (a->call_id > b->call_id) - (a->call_id < b->call_id);
}

static int filter_keeps(const char *filter, const char *type, const char *address)
{
    return tftap_filter_keeps(filter, type, address);
}

static int in_ids(const int64_t *v, size_t n, int64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && v[lo] == id;
}

static int was_failed(const struct show_ctx *x, int64_t id)
{
    return in_ids(x->failed, x->nfailed, id);
}

static int cmp_id(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void diags_text(struct show_ctx *x, const sj_node *diags)
{
    tftap_buf *b = &x->out;
    for (const sj_node *d = diags && diags->kind == SJ_ARRAY ? diags->child : NULL; d;
         d = d->next) {
        const sj_node *sev = sj_get(d, "severity"), *sum = sj_get(d, "summary"),
                      *det = sj_get(d, "detail"), *ap = sj_get(sj_get(d, "attribute"), "path");
        int warn = sev && sev->kind == SJ_STRING && strcmp(sev->str, "WARNING") == 0;
        const char *col = x->color ? (warn ? "\033[33m" : "\033[31m") : "";
        tftap_buf_printf(b, "  %s%s%s: %.*s", col, warn ? "Warning" : "Error",
                         x->color ? "\033[0m" : "",
                         sum && sum->kind == SJ_STRING ? (int)sum->len : 0,
                         sum && sum->kind == SJ_STRING ? sum->str : "");
        if (ap && ap->kind == SJ_STRING && ap->len)
            tftap_buf_printf(b, " (at %.*s)", (int)ap->len, ap->str);
        tftap_buf_putc(b, '\n');
        if (det && det->kind == SJ_STRING && det->len)
            tftap_buf_printf(b, "    %.*s\n", (int)det->len, det->str);
    }
}

/* A failed call's status in words: "UNAVAILABLE (message)", "no answer",
 * or "error diagnostics" when gRPC said OK. */
static void failure_words(tftap_buf *b, int in_flight, int has_status, int code, const char *name,
                          const char *message)
{
    if (in_flight)
        tftap_buf_puts(b, "no answer");
    else if (has_status && code != 0)
        tftap_buf_printf(b, "%s", name ? name : "gRPC status");
    else
        tftap_buf_puts(b, "error diagnostics");
    if (!in_flight && has_status && code != 0 && !name)
        tftap_buf_printf(b, " %d", code);
    if (!in_flight && has_status && code != 0 && message && *message)
        tftap_buf_printf(b, " (%s)", message);
}

/* A failed (or rejected) call to show first. */
static int remember_failed(struct show_ctx *x, int64_t id, const char *rpc)
{
    if (x->nfailed == x->failed_cap) {
        size_t cap = x->failed_cap ? x->failed_cap * 2 : 16;
        int64_t *v = realloc(x->failed, cap * sizeof *v);
        if (!v)
            return TFTAP_ENOMEM;
        x->failed = v;
        x->failed_cap = cap;
    }
    x->failed[x->nfailed++] = id;
    x->nfailed_changes += is_change_rpc(rpc);
    return 0;
}

/* Pass 1: the run's failed calls, remembered. */
static int collect_failed(void *ctx, const store_call_row *r)
{
    struct show_ctx *x = ctx;
    if (!filter_keeps(x->filter, r->type_name, r->address))
        return 0;
    /* Never answered because the record lost it: not recorded, no failure
     * (the verdict counts it with the gap). */
    if (cli_verdict_unrecorded(x->verdict, r))
        return 0;
    return remember_failed(x, r->id, r->rpc);
}

/* The failed calls that are no resource change (ConfigureProvider,
 * ValidateResourceConfig, a call cut by a dying provider, ...). */
static int each_failed_call(void *ctx, const store_call_row *r)
{
    struct show_ctx *x = ctx;
    tftap_buf *b = &x->out;
    /* A resource change call is here only when its messages could not be
     * read as one (a decode error keeps it out of v_resource_changes). */
    if (!was_failed(x, r->id) || in_ids(x->shown, x->nshown, r->id))
        return 0;
    sj_doc *doc = NULL;
    const sj_node *diags = NULL;
    if (r->response_json &&
        sj_parse(r->response_json, strlen(r->response_json), TFTAP_JSON_MAX_DEPTH, &doc) == 0)
        diags = sj_get(sj_root(doc), "diagnostics");
    if (x->json) {
        tftap_buf_puts(b, x->n ? ",\n    " : "\n    ");
        tftap_buf_printf(b, "{\"call_id\":%lld,\"method\":", (long long)r->id);
        cli_json_str(b, r->rpc);
        tftap_buf_puts(b, ",\"provider\":");
        cli_json_str(b, r->provider);
        tftap_buf_puts(b, ",\"type_name\":");
        cli_json_str(b, r->type_name);
        tftap_buf_puts(b, ",\"address\":");
        cli_json_str(b, r->address);
        tftap_buf_puts(b, ",\"action\":null");
        if (r->has_status)
            tftap_buf_printf(b, ",\"status_code\":%d", r->status_code);
        else
            tftap_buf_puts(b, ",\"status_code\":null");
        tftap_buf_puts(b, ",\"status_name\":");
        cli_json_str(b, r->status_name);
        tftap_buf_puts(b, ",\"status_message\":");
        cli_json_str(b, r->status_message);
        tftap_buf_printf(b, ",\"no_answer\":%s,\"diagnostics\":", r->in_flight ? "true" : "false");
        if (diags && diags->kind == SJ_ARRAY)
            sj_write(diags, b);
        else
            tftap_buf_puts(b, "[]");
        tftap_buf_puts(b, ",\"failed\":true}");
    } else {
        if (x->blocks)
            tftap_buf_putc(b, '\n');
        tftap_buf_printf(b, "  # %s", r->rpc ? r->rpc : "?");
        if (r->type_name || r->provider)
            tftap_buf_printf(b, " (%s)", r->type_name ? r->type_name : r->provider);
        tftap_buf_puts(b, " failed: ");
        failure_words(b, r->in_flight, r->has_status, r->status_code, r->status_name,
                      r->status_message);
        tftap_buf_printf(b, "  [call %lld]\n", (long long)r->id);
        diags_text(x, diags);
    }
    sj_free(doc);
    x->n++;
    x->blocks++;
    return cli_flush(b) ? TFTAP_EIO : 0;
}

static int each_change(void *ctx, const store_change_row *c)
{
    struct show_ctx *x = ctx;
    tftap_buf *b = &x->out;
    enum analysis_action a = ANALYSIS_ACTION_NOOP;
    if (analysis_change_action(c, &a) != 0) {
        x->err = TFTAP_EDECODE;
        return TFTAP_EDECODE;
    }
    /* Failed changes, and those whose answer core rejects, were shown
     * first, whatever they were; JSON lists them among the changes too. */
    const analysis_finding *rej = cli_verdict_reject_of(x->verdict, c->call_id);
    /* Never answered because the record lost it: no failure. */
    int failed = c->failed && !cli_verdict_unrecorded_id(x->verdict, c->call_id);
    if (x->failed_pass && !failed && !rej)
        return 0;
    if (!x->failed_pass && (failed || rej) && !x->json)
        return 0;
    int is_read = a == ANALYSIS_ACTION_READ || (c->rpc && strcmp(c->rpc, "ReadResource") == 0);
    if (!failed && !rej && !x->all && (a == ANALYSIS_ACTION_NOOP || is_read || c->superseded)) {
        x->skipped++;
        return 0;
    }
    if (x->json) {
        tftap_buf_puts(b, x->n ? ",\n    " : "\n    ");
        tftap_buf_printf(b, "{\"call_id\":%lld,\"method\":", (long long)c->call_id);
        cli_json_str(b, c->rpc);
        tftap_buf_puts(b, ",\"type_name\":");
        cli_json_str(b, c->type_name);
        tftap_buf_puts(b, ",\"address\":");
        cli_json_str(b, c->address);
        tftap_buf_puts(b, ",\"address_note\":");
        cli_json_str(b, c->address_note);
        tftap_buf_printf(b, ",\"action\":\"%s\",\"prior\":", analysis_action_name(a));
        cli_json_raw(b, c->prior);
        tftap_buf_puts(b, ",\"proposed\":");
        cli_json_raw(b, c->proposed);
        tftap_buf_puts(b, ",\"config\":");
        cli_json_raw(b, c->config);
        tftap_buf_puts(b, ",\"planned\":");
        cli_json_raw(b, c->planned);
        tftap_buf_puts(b, ",\"new\":");
        cli_json_raw(b, c->new_state);
        tftap_buf_puts(b, ",\"requires_replace\":");
        cli_json_raw(b, c->requires_replace);
        tftap_buf_puts(b, ",\"diagnostics\":");
        cli_json_raw(b, c->diagnostics);
        tftap_buf_printf(b, ",\"failed\":%s,\"rejected\":", failed ? "true" : "false");
        if (rej) {
            tftap_buf_puts(b, "{\"rule\":");
            cli_json_str(b, rej->rule);
            tftap_buf_puts(b, ",\"path\":");
            cli_json_str(b, rej->path);
            tftap_buf_puts(b, ",\"expected\":");
            cli_json_raw(b, rej->expected);
            tftap_buf_puts(b, ",\"actual\":");
            cli_json_raw(b, rej->actual);
            tftap_buf_putc(b, '}');
        } else {
            tftap_buf_puts(b, "null");
        }
        if (failed) {
            if (c->has_status)
                tftap_buf_printf(b, ",\"status_code\":%d", c->status_code);
            else
                tftap_buf_puts(b, ",\"status_code\":null");
            tftap_buf_puts(b, ",\"status_name\":");
            cli_json_str(b, c->status_name);
            tftap_buf_puts(b, ",\"status_message\":");
            cli_json_str(b, c->status_message);
            tftap_buf_printf(b, ",\"no_answer\":%s", c->in_flight ? "true" : "false");
        }
        tftap_buf_putc(b, '}');
    } else {
        tftap_buf blk = TFTAP_BUF_INIT;
        if (!x->failed_pass)
            b = &blk; /* kept, printed in address order */
        else if (x->blocks)
            tftap_buf_putc(b, '\n');
        store_change_row told = *c;
        told.failed = failed;
        int rc = analysis_render_change(&told,
                                        (x->color ? ANALYSIS_RENDER_COLOR : 0) |
                                            (cli_verdict_unrecorded_id(x->verdict, c->call_id)
                                                 ? ANALYSIS_RENDER_UNRECORDED
                                                 : 0),
                                        b);
        if (rc) {
            tftap_buf_done(&blk);
            x->err = rc;
            return rc;
        }
        if (rej) {
            tftap_buf_printf(b, "  Core rejected this answer (%s at %s): %s\n", rej->rule,
                             *rej->path ? rej->path : "the object", rej->message);
            if (rej->expected)
                tftap_buf_printf(b, "    expected: %s\n", rej->expected);
            if (rej->actual)
                tftap_buf_printf(b, "    actual:   %s\n", rej->actual);
        }
        if (b == &blk) {
            if (x->npending == x->pending_cap) {
                size_t cap = x->pending_cap ? x->pending_cap * 2 : 64;
                struct block *v = realloc(x->pending, cap * sizeof *v);
                if (!v) {
                    tftap_buf_done(&blk);
                    return TFTAP_ENOMEM;
                }
                x->pending = v;
                x->pending_cap = cap;
            }
            struct block *k = &x->pending[x->npending];
            k->call_id = c->call_id;
            k->address = c->address ? strdup(c->address) : NULL;
            k->text = tftap_buf_failed(&blk) ? NULL : tftap_buf_take(&blk, &k->len);
            tftap_buf_done(&blk);
            if (!k->text || (c->address && !k->address)) {
                free(k->address);
                free(k->text);
                return TFTAP_ENOMEM;
            }
            x->npending++;
            b = &x->out;
        }
    }
    if (x->failed_pass && x->nshown < x->nfailed)
        x->shown[x->nshown++] = c->call_id;
    x->n++;
    x->blocks++;
    if (!failed)
        x->counts[a]++;
    if (x->failed_pass && !failed && rej)
        x->rejected_shown++;
    if (!c->address && !x->failed_pass)
        x->unmatched++;
    return cli_flush(b) ? TFTAP_EIO : 0;
}

struct diag_ctx {
    struct show_ctx *x;
    int n;
};

static int each_diag(void *ctx, const store_diag_row *d)
{
    struct diag_ctx *dc = ctx;
    tftap_buf *b = &dc->x->out;
    /* Those of failed calls and of resource changes were shown with them. */
    if (was_failed(dc->x, d->call_id))
        return 0;
    if (d->rpc &&
        (strcmp(d->rpc, "PlanResourceChange") == 0 || strcmp(d->rpc, "ApplyResourceChange") == 0 ||
         ((strcmp(d->rpc, "ReadResource") == 0 || strcmp(d->rpc, "ReadDataSource") == 0) &&
          dc->x->all)))
        return 0;
    if (dc->x->json) {
        tftap_buf_puts(b, dc->n ? ",\n    " : "\n    ");
        tftap_buf_printf(b, "{\"call_id\":%lld,\"method\":", (long long)d->call_id);
        cli_json_str(b, d->rpc);
        tftap_buf_puts(b, ",\"type_name\":");
        cli_json_str(b, d->type_name);
        tftap_buf_puts(b, ",\"address\":");
        cli_json_str(b, d->address);
        tftap_buf_puts(b, ",\"severity\":");
        cli_json_str(b, d->severity);
        tftap_buf_puts(b, ",\"summary\":");
        cli_json_str(b, d->summary);
        tftap_buf_puts(b, ",\"detail\":");
        cli_json_str(b, d->detail);
        tftap_buf_puts(b, ",\"attribute\":");
        cli_json_str(b, d->attribute);
        tftap_buf_putc(b, '}');
    } else {
        if (dc->n == 0)
            tftap_buf_puts(b, dc->x->blocks ? "\nDiagnostics from other calls:\n"
                                            : "Diagnostics from provider calls:\n");
        int warn = d->severity && strcmp(d->severity, "WARNING") == 0;
        const char *col = dc->x->color ? (warn ? "\033[33m" : "\033[31m") : "";
        const char *reset = dc->x->color ? "\033[0m" : "";
        /* A matched data source read names its address. */
        const char *what = d->address ? d->address : d->type_name;
        tftap_buf_printf(b, "  %s%s%s: %s  [%s%s%s, call %lld]\n", col, warn ? "Warning" : "Error",
                         reset, d->summary ? d->summary : "", d->rpc ? d->rpc : "?",
                         what ? " " : "", what ? what : "", (long long)d->call_id);
        if (d->attribute && *d->attribute)
            tftap_buf_printf(b, "    at %s\n", d->attribute);
        if (d->detail && *d->detail)
            tftap_buf_printf(b, "    %s\n", d->detail);
    }
    dc->n++;
    return cli_flush(b) ? TFTAP_EIO : 0;
}

struct run_exit {
    int has, code;
};

static int run_exit_cb(void *ctx, const store_run_row *row)
{
    struct run_exit *e = ctx;
    e->has = row->has_exit_code;
    e->code = row->exit_code;
    return 0;
}

/* One run's report (text or JSON) on stdout; the exit code. */
static int show_run(struct cli_read *r, int64_t run, const char *filter, int all, int json)
{
    int rc = 0;
    struct show_ctx x = {.out = TFTAP_BUF_INIT,
                         .json = json,
                         .all = all,
                         .color = !json && cli_use_color(),
                         .filter = filter};
    struct diag_ctx dc = {&x, 0};
    struct run_exit ex = {0, 0};
    int exit_code = 0, nfailed = 0;
    cli_verdict v;

    /* The verdict first: how the command ended and why it failed. Then the
     * failures: which calls failed or were rejected, each with what it
     * attempted. */
    memset(&v, 0, sizeof v);
    exit_code = cli_filter_check(&r->s, &r->path, &run, 1, CLI_FILTER_ADDRESS_OR_TYPE, filter);
    if (exit_code)
        return exit_code;
    rc = cli_verdict_read(r->s, run, 0, &v);
    x.verdict = &v;
    store_calls_filter only_failed = {NULL, NULL, 1};
    if (!rc)
        rc = store_calls_query(r->s, run, &only_failed, collect_failed, &x);
    size_t nfailed_calls = x.nfailed;
    if (!rc && x.nfailed)
        qsort(x.failed, x.nfailed, sizeof *x.failed, cmp_id);
    for (size_t i = 0, sorted = x.nfailed; !rc && i < v.findings.n; i++) {
        const analysis_finding *f = &v.findings.v[i];
        int seen = in_ids(x.failed, sorted, f->call_id);
        for (size_t j = sorted; !seen && j < x.nfailed; j++)
            seen = x.failed[j] == f->call_id;
        if (f->verdict == ANALYSIS_REJECTS && !seen &&
            filter_keeps(filter, f->type_name, f->address))
            rc = remember_failed(&x, f->call_id, f->rpc);
    }
    if (!rc) {
        if (x.nfailed)
            qsort(x.failed, x.nfailed, sizeof *x.failed, cmp_id);
        rc = store_run_get(r->s, run, run_exit_cb, &ex);
    }
    if (!rc) {
        if (json) {
            tftap_buf_printf(&x.out, "{\"run\":%lld,\"exit_code\":", (long long)run);
            if (ex.has)
                tftap_buf_printf(&x.out, "%d", ex.code);
            else
                tftap_buf_puts(&x.out, "null");
            tftap_buf_puts(&x.out, ",\"verdict\":");
            cli_verdict_json(&v, &x.out);
            tftap_buf_printf(&x.out, ",\"failed\":%zu,\"failures\":[", nfailed_calls);
        } else {
            cli_verdict_line(&v, run, &x.out);
            tftap_buf_putc(&x.out, '\n');
        }
        x.failed_pass = 1;
        x.shown = x.nfailed ? malloc(x.nfailed * sizeof *x.shown) : NULL;
        if (x.nfailed && !x.shown)
            rc = TFTAP_ENOMEM;
        if (!rc && x.nfailed_changes)
            rc = store_changes_query(r->s, run, filter, 0, each_change, &x);
        if (!rc && x.nshown < x.nfailed) {
            if (x.nshown)
                qsort(x.shown, x.nshown, sizeof *x.shown, cmp_id);
            rc = store_calls_query(r->s, run, &only_failed, each_failed_call, &x);
        }
        x.failed_pass = 0;
        nfailed = x.n;
        x.n = 0;
    }
    if (!rc) {
        if (json)
            tftap_buf_puts(&x.out, nfailed ? "\n  ],\n  \"changes\":[" : "],\"changes\":[");
        rc = store_changes_each(r->s, run, filter, each_change, &x);
    }
    if (!rc && x.npending) {
        /* The changes in the order of their addresses, after the failures. */
        qsort(x.pending, x.npending, sizeof *x.pending, cmp_block);
        for (size_t i = 0; i < x.npending && !rc; i++) {
            if (i || nfailed)
                tftap_buf_putc(&x.out, '\n');
            tftap_buf_append(&x.out, x.pending[i].text, x.pending[i].len);
            rc = cli_flush(&x.out) ? TFTAP_EIO : 0;
        }
    }
    if (!rc) {
        if (json)
            tftap_buf_puts(&x.out, x.n ? "\n  ],\n  \"diagnostics\":[" : "],\"diagnostics\":[");
        rc = store_diagnostics_each(r->s, run, filter, each_diag, &dc);
    }
    if (rc) {
        if (x.err == TFTAP_EDECODE)
            cli_error("run %lld holds a change whose JSON is malformed", (long long)run);
        else if (rc == TFTAP_ENOMEM)
            cli_error("out of memory");
        else if (rc != TFTAP_EIO)
            cli_error("reading %s: %s", r->path, store_errmsg(r->s));
        exit_code = 1;
    } else if (json) {
        tftap_buf_puts(&x.out, dc.n ? "\n  ]}\n" : "]}\n");
        exit_code = cli_flush(&x.out);
    } else {
        if (x.n == 0 && dc.n == 0 && nfailed == 0)
            tftap_buf_printf(&x.out, "Run %lld recorded no resource changes%s%s%s.\n",
                             (long long)run, filter ? " for " : "", filter ? filter : "",
                             x.skipped ? " (only no-op changes and reads: see --all)" : "");
        else if (x.n || nfailed) {
            /* Rejected answers were shown first, and are changes made. */
            int rejected = x.rejected_shown, failed = nfailed - rejected, changes = x.n + rejected;
            tftap_buf_puts(&x.out, "\n");
            if (failed)
                tftap_buf_printf(&x.out, "%d call%s failed (shown first); ", failed,
                                 failed == 1 ? "" : "s");
            if (rejected)
                tftap_buf_printf(&x.out, "%d answer%s core rejected (shown first); ", rejected,
                                 rejected == 1 ? "" : "s");
            tftap_buf_printf(&x.out,
                             "%d change%s: %d to create, %d to update, %d to replace, %d to "
                             "destroy",
                             changes, changes == 1 ? "" : "s", x.counts[ANALYSIS_ACTION_CREATE],
                             x.counts[ANALYSIS_ACTION_UPDATE], x.counts[ANALYSIS_ACTION_REPLACE],
                             x.counts[ANALYSIS_ACTION_DELETE]);
            if (x.counts[ANALYSIS_ACTION_NOOP])
                tftap_buf_printf(&x.out, ", %d no-op", x.counts[ANALYSIS_ACTION_NOOP]);
            if (x.counts[ANALYSIS_ACTION_READ])
                tftap_buf_printf(&x.out, ", %d data source read%s", x.counts[ANALYSIS_ACTION_READ],
                                 x.counts[ANALYSIS_ACTION_READ] == 1 ? "" : "s");
            if (x.skipped)
                tftap_buf_printf(&x.out, " (%d no-op, read or applied plan not shown: --all)",
                                 x.skipped);
            tftap_buf_puts(&x.out, ".\n");
            if (x.unmatched)
                tftap_buf_printf(&x.out,
                                 "%d change%s could not be matched to a resource address (see "
                                 "the notes above; addresses come from the plan or state the "
                                 "run wrote).\n",
                                 x.unmatched, x.unmatched == 1 ? "" : "s");
        }
        exit_code = cli_flush(&x.out);
    }
    free(x.failed);
    free(x.shown);
    for (size_t i = 0; i < x.npending; i++) {
        free(x.pending[i].address);
        free(x.pending[i].text);
    }
    free(x.pending);
    cli_verdict_done(&v);
    tftap_buf_done(&x.out);
    return exit_code;
}

static int step_header(void *ctx, const store_run_row *row)
{
    tftap_buf *b = ctx;
    tftap_buf_puts(b, "== ");
    cli_step_name(row, b);
    tftap_buf_printf(b, " (run %lld) ==\n", (long long)row->id);
    return 0;
}

int cli_show(int argc, char **argv)
{
    int all = 0;
    const char *test = NULL;
    const struct cli_opt opts[] = {{"--all", NULL, &all, 0}, {"--test", &test, NULL, 0}, {0}};
    struct cli_read r;
    int rc = cli_read_begin(argc, argv, opts, usage_text, 1, 2, &r);
    if (rc != CLI_READ_GO)
        return rc;
    if (test == NULL) {
        rc = show_run(&r, r.run, r.pos[1], all, r.json);
        cli_read_done(&r);
        return rc;
    }
    /* An acceptance test suite: each step run of the tests --test names. */
    int64_t *ids = NULL;
    size_t n = 0;
    int exit_code = cli_suite_steps(&r, argv[0], test, &ids, &n);
    if (r.json && exit_code == 0)
        fputs("[\n", stdout);
    for (size_t i = 0; i < n && exit_code == 0; i++) {
        tftap_buf h = TFTAP_BUF_INIT;
        if (r.json)
            tftap_buf_puts(&h, i ? ",\n" : "");
        else {
            tftap_buf_puts(&h, i ? "\n" : "");
            store_run_get(r.s, ids[i], step_header, &h);
        }
        exit_code = cli_flush(&h);
        tftap_buf_done(&h);
        if (exit_code == 0)
            exit_code = show_run(&r, ids[i], r.pos[1], all, r.json);
    }
    if (r.json && exit_code == 0)
        fputs("]\n", stdout);
    free(ids);
    cli_read_done(&r);
    return exit_code;
}
