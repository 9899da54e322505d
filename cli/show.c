/* tftap show RUN [ADDRESS|TYPE]: the recorded resource changes of a run,
 * rendered the way a plan reads, and the diagnostics providers returned. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "analysis/analysis.h"
#include "cli/cli_store.h"

static const char usage_text[] =
    "usage: tftap show RUN [ADDRESS|TYPE] [--all] [--db PATH] [--json]\n\n"
    "Show each resource instance change recorded in RUN (an id or 'last') as a plan\n"
    "shows it: PlanResourceChange (prior -> planned) and ApplyResourceChange (prior ->\n"
    "new state) calls, then the diagnostics of other calls. A plan that an apply in the\n"
    "same run carried out is shown once, as the apply. ADDRESS (test_thing.a, also\n"
    "matching its instances) or TYPE (test_thing) keeps only those. --all also shows\n"
    "no-op changes, superseded plans, ReadResource and ReadDataSource calls. A change\n"
    "whose call could not be tied to an address says why.\n";

struct show_ctx {
    tftap_buf out;
    int json, all, color;
    int n, unmatched, skipped;
    int counts[ANALYSIS_ACTION_READ + 1];
    int err;
};

static int each_change(void *ctx, const store_change_row *c)
{
    struct show_ctx *x = ctx;
    tftap_buf *b = &x->out;
    enum analysis_action a = ANALYSIS_ACTION_NOOP;
    if (analysis_change_action(c, &a) != 0) {
        x->err = TFTAP_EDECODE;
        return TFTAP_EDECODE;
    }
    int is_read = a == ANALYSIS_ACTION_READ || (c->rpc && strcmp(c->rpc, "ReadResource") == 0);
    if (!x->all && (a == ANALYSIS_ACTION_NOOP || is_read || c->superseded)) {
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
        tftap_buf_putc(b, '}');
    } else {
        if (x->n)
            tftap_buf_putc(b, '\n');
        int rc = analysis_render_change(c, x->color ? ANALYSIS_RENDER_COLOR : 0, b);
        if (rc) {
            x->err = rc;
            return rc;
        }
    }
    x->n++;
    x->counts[a]++;
    if (!c->address)
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
    /* Those of resource changes were shown with their change. */
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
            tftap_buf_puts(b, dc->x->n ? "\nDiagnostics from other calls:\n"
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

int cli_show(int argc, char **argv)
{
    const char *db = NULL, *pos[2] = {NULL, NULL};
    int json = 0, help = 0, npos = 0, all = 0;
    const struct cli_opt opts[] = {{"--all", NULL, &all}, {0}};
    int rc = cli_store_args(argc, argv, opts, &db, &json, &help, pos, 2, &npos);
    if (!rc && !help && npos < 1) {
        cli_error("show needs RUN (a run id or 'last')");
        rc = 2;
    }
    if (rc || help) {
        if (!rc)
            fputs(usage_text, stdout);
        return rc;
    }
    const char *path = cli_db_path(db);
    store *s = NULL;
    if (cli_open_store(path, &s))
        return 1;
    int64_t run = 0;
    rc = cli_resolve_run(s, path, pos[0], &run);
    if (rc) {
        store_close(s);
        return rc;
    }
    struct show_ctx x = {
        .out = TFTAP_BUF_INIT, .json = json, .all = all, .color = !json && cli_use_color()};
    int exit_code = 0;
    if (json)
        tftap_buf_printf(&x.out, "{\"run\":%lld,\"changes\":[", (long long)run);
    rc = store_changes_each(s, run, pos[1], each_change, &x);
    struct diag_ctx dc = {&x, 0};
    if (!rc) {
        if (json)
            tftap_buf_puts(&x.out, x.n ? "\n  ],\n  \"diagnostics\":[" : "],\"diagnostics\":[");
        rc = store_diagnostics_each(s, run, pos[1], each_diag, &dc);
    }
    if (rc) {
        if (x.err == TFTAP_EDECODE)
            cli_error("run %lld holds a change whose JSON is malformed", (long long)run);
        else if (rc != TFTAP_EIO)
            cli_error("reading %s: %s", path, store_errmsg(s));
        exit_code = 1;
    } else if (json) {
        tftap_buf_puts(&x.out, dc.n ? "\n  ]}\n" : "]}\n");
        exit_code = cli_flush(&x.out);
    } else {
        if (x.n == 0 && dc.n == 0)
            tftap_buf_printf(&x.out, "Run %lld recorded no resource changes%s%s%s.\n",
                             (long long)run, pos[1] ? " for " : "", pos[1] ? pos[1] : "",
                             x.skipped ? " (only no-op changes and reads: see --all)" : "");
        else if (x.n) {
            tftap_buf_printf(&x.out,
                             "\n%d change%s: %d to create, %d to update, %d to replace, %d to "
                             "destroy",
                             x.n, x.n == 1 ? "" : "s", x.counts[ANALYSIS_ACTION_CREATE],
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
    tftap_buf_done(&x.out);
    store_close(s);
    return exit_code;
}
