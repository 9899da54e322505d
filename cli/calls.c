/* tftap calls RUN: the provider calls of one run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "cli/cli_store.h"
#include "cli/filter.h"
#include "cli/verdict.h"

static const char usage_text[] =
    "usage: tftap calls RUN [--method M] [--type T] [--failed] [--all] [--db PATH] [--json]\n\n"
    "List the gRPC calls recorded in RUN (an id from 'tftap runs', or 'last') in start\n"
    "order. STATUS is OK, the gRPC status by name (UNAVAILABLE, ...), FAILED (answered\n"
    "OK with error diagnostics), 'no answer' (never answered, the run is over),\n"
    "in-flight, or 'closed' (an expected close: go-plugin's streams and Shutdown ending\n"
    "as the provider exits, or UNIMPLEMENTED from a method a provider may lack, such as\n"
    "GetResourceIdentitySchemas). DIAGNOSTICS counts the response's errors and warnings.\n"
    "--method keeps one method (PlanResourceChange or a full path, any case), --type\n"
    "one resource/data source type, --failed the calls that failed and those whose\n"
    "answer core rejects (REJECTED: answered OK, but breaking a rule 'tftap check' names,\n"
    "shown at the end of the line). When the run failed, a first line says why: its exit\n"
    "code, failed calls, rejected answers, records lost. --json prints each call as a\n"
    "v_calls row (docs/database.md), messages decoded, every call. In the table,\n"
    "go-plugin's own calls (its stdio and broker streams, Shutdown) are left out unless\n"
    "they failed, --all is given or --method names one.\n";

struct calls_ctx {
    tftap_buf out;
    int json;
    int n;
    int failed_only;      /* --failed: failed calls and answers core rejects */
    const cli_verdict *v; /* the run's */
    int all;              /* --all: go-plugin's housekeeping too */
    int hidden;           /* housekeeping calls left out */
    /* Text: the rows, printed at the end with each column as wide as its
     * widest cell (a long type name must not shift the columns after it). */
    struct row *rows;
    size_t nrows, cap;
};

#define NCOLS 10
struct row {
    char *cell[NCOLS]; /* the last is the address and what follows it */
};
static const char *const heads[NCOLS] = {"CALL",        "PROC", "METHOD", "TYPE", "STATUS",
                                         "DIAGNOSTICS", "TIME", "REQ",    "RESP", "ADDRESS"};
/* Numbers align right. */
static const int right[NCOLS] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 0};

static int add_row(struct calls_ctx *c, char *cells[NCOLS])
{
    if (c->nrows == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        struct row *v = realloc(c->rows, cap * sizeof *v);
        if (!v)
            return TFTAP_ENOMEM;
        c->rows = v;
        c->cap = cap;
    }
    struct row *r = &c->rows[c->nrows++];
    int bad = 0;
    for (int i = 0; i < NCOLS; i++) {
        r->cell[i] = strdup(cells[i]);
        bad |= r->cell[i] == NULL;
    }
    return bad ? TFTAP_ENOMEM : 0;
}

static void print_rows(struct calls_ctx *c)
{
    size_t w[NCOLS];
    for (int i = 0; i < NCOLS; i++)
        w[i] = strlen(heads[i]);
    for (size_t r = 0; r < c->nrows; r++)
        for (int i = 0; i < NCOLS - 1; i++)
            if (strlen(c->rows[r].cell[i]) > w[i])
                w[i] = strlen(c->rows[r].cell[i]);
    for (size_t r = 0; r <= c->nrows; r++) {
        const char *const *cells = r == 0 ? heads : (const char *const *)c->rows[r - 1].cell;
        for (int i = 0; i < NCOLS - 1; i++)
            tftap_buf_printf(&c->out, right[i] ? "%*s " : "%-*s ", (int)w[i], cells[i]);
        tftap_buf_printf(&c->out, " %s\n", cells[NCOLS - 1]);
    }
}

static void rows_free(struct calls_ctx *c)
{
    for (size_t r = 0; r < c->nrows; r++)
        for (int i = 0; i < NCOLS; i++)
            free(c->rows[r].cell[i]);
    free(c->rows);
}

/* go-plugin's own calls (its stdio and broker streams, Shutdown, the health
 * check): plumbing around the provider's, shown with --all or when failed. */
static int is_plumbing(const store_call_row *r)
{
    return r->method != NULL &&
           (strncmp(r->method, "/plugin.", 8) == 0 || strncmp(r->method, "/grpc.health.", 13) == 0);
}

static void json_int_or_null(tftap_buf *b, const char *key, int has, long long v)
{
    if (has)
        tftap_buf_printf(b, ",\"%s\":%lld", key, v);
    else
        tftap_buf_printf(b, ",\"%s\":null", key);
}

/* The keys and their order are v_calls' columns. */
static void call_json(tftap_buf *b, const store_call_row *r)
{
    tftap_buf_printf(b, "{\"call_id\":%lld,\"run_id\":%lld,\"process_id\":%lld", (long long)r->id,
                     (long long)r->run_id, (long long)r->process_id);
    tftap_buf_puts(b, ",\"provider\":");
    cli_json_str(b, r->provider);
    tftap_buf_puts(b, ",\"provider_version\":");
    cli_json_str(b, r->provider_version);
    json_int_or_null(b, "protocol", r->has_protocol, r->protocol);
    tftap_buf_printf(b, ",\"call_seq\":%lld", (long long)r->call_seq);
    tftap_buf_puts(b, ",\"method\":");
    cli_json_str(b, r->method);
    tftap_buf_puts(b, ",\"rpc\":");
    cli_json_str(b, r->rpc);
    tftap_buf_printf(b, ",\"stream\":%s", r->stream ? "true" : "false");
    tftap_buf_puts(b, ",\"type_name\":");
    cli_json_str(b, r->type_name);
    tftap_buf_puts(b, ",\"address\":");
    cli_json_str(b, r->address);
    tftap_buf_printf(b, ",\"started_us\":%lld", (long long)r->started_us);
    json_int_or_null(b, "ended_us", r->ended_us != 0, r->ended_us);
    json_int_or_null(b, "duration_us", r->ended_us != 0, r->ended_us - r->started_us);
    tftap_buf_printf(b, ",\"in_flight\":%s", r->in_flight ? "true" : "false");
    json_int_or_null(b, "status_code", r->has_status, r->status_code);
    tftap_buf_puts(b, ",\"status_message\":");
    cli_json_str(b, r->status_message);
    tftap_buf_printf(b,
                     ",\"request_bytes\":%lld,\"response_bytes\":%lld,\"request_count\":%lld,"
                     "\"response_count\":%lld",
                     (long long)r->request_bytes, (long long)r->response_bytes,
                     (long long)r->request_count, (long long)r->response_count);
    tftap_buf_puts(b, ",\"request_json\":");
    cli_json_raw(b, r->request_json);
    tftap_buf_puts(b, ",\"response_json\":");
    cli_json_raw(b, r->response_json);
    tftap_buf_puts(b, ",\"decode_error\":");
    cli_json_str(b, r->decode_error);
    tftap_buf_puts(b, ",\"status_name\":");
    cli_json_str(b, r->status_name);
    tftap_buf_printf(b,
                     ",\"error_count\":%lld,\"warning_count\":%lld,\"is_teardown\":%s,"
                     "\"failed\":%s,\"expected_close\":%s,\"not_recorded\":%s}",
                     (long long)r->error_count, (long long)r->warning_count,
                     r->is_teardown ? "true" : "false", r->failed ? "true" : "false",
                     r->expected_close ? "true" : "false", r->not_recorded ? "true" : "false");
}

/* One word for what became of the call (see usage_text). */
static void call_status(const store_call_row *r, int rejected, int unrecorded, char out[24])
{
    if (unrecorded)
        snprintf(out, 24, "not recorded");
    else if (rejected && !r->failed)
        snprintf(out, 24, "REJECTED");
    else if (r->expected_close)
        snprintf(out, 24, "closed");
    else if (!r->ended_us)
        snprintf(out, 24, "%s", r->failed ? "no answer" : "in-flight");
    else if (r->has_status && r->status_code == 0)
        snprintf(out, 24, "%s", r->failed ? "FAILED" : "OK");
    else if (r->status_name)
        snprintf(out, 24, "%s", r->status_name);
    else if (r->has_status)
        snprintf(out, 24, "status %d", r->status_code);
    else
        snprintf(out, 24, "no status");
}

static void call_diags(const store_call_row *r, char out[40])
{
    if (!r->error_count && !r->warning_count)
        snprintf(out, 40, "-");
    else if (!r->warning_count)
        snprintf(out, 40, "%lld error%s", (long long)r->error_count,
                 r->error_count == 1 ? "" : "s");
    else if (!r->error_count)
        snprintf(out, 40, "%lld warning%s", (long long)r->warning_count,
                 r->warning_count == 1 ? "" : "s");
    else
        snprintf(out, 40, "%lldE %lldW", (long long)r->error_count, (long long)r->warning_count);
}

static int each_call(void *ctx, const store_call_row *r)
{
    struct calls_ctx *c = ctx;
    tftap_buf *b = &c->out;
    const analysis_finding *rej = cli_verdict_reject_of(c->v, r->id);
    if (c->failed_only && ((!r->failed && !rej) || cli_verdict_unrecorded(c->v, r)))
        return 0;
    if (!c->all && !c->json && !r->failed && is_plumbing(r)) {
        c->hidden++;
        return 0;
    }
    if (c->json) {
        tftap_buf_puts(b, c->n ? ",\n  " : "[\n  ");
        call_json(b, r);
    } else {
        char id[24], proc[24], dur[32], status[24], diags[40], req[24], resp[24];
        snprintf(id, sizeof id, "%lld", (long long)r->id);
        snprintf(proc, sizeof proc, "%lld", (long long)r->process_id);
        cli_format_duration(r->started_us, r->ended_us, dur);
        call_status(r, rej != NULL, cli_verdict_unrecorded(c->v, r), status);
        call_diags(r, diags);
        snprintf(req, sizeof req, "%lld", (long long)r->request_bytes);
        snprintf(resp, sizeof resp, "%lld", (long long)r->response_bytes);
        tftap_buf last = TFTAP_BUF_INIT;
        tftap_buf_puts(&last, r->address ? r->address : "-");
        if (r->expected_close && r->status_name && r->status_code != 0)
            tftap_buf_printf(&last, "  (expected close: %s)", r->status_name);
        if (rej)
            tftap_buf_printf(&last, "  (core rejects: %s at %s)", rej->rule,
                             *rej->path ? rej->path : "the object");
        if (r->decode_error)
            tftap_buf_printf(&last, "  ! %s", r->decode_error);
        char *cells[NCOLS] = {id,
                              proc,
                              (char *)(r->rpc ? r->rpc : "?"),
                              (char *)(r->type_name ? r->type_name : "-"),
                              status,
                              diags,
                              dur,
                              req,
                              resp,
                              (char *)tftap_buf_cstr(&last)};
        int rc = tftap_buf_failed(&last) ? TFTAP_ENOMEM : add_row(c, cells);
        tftap_buf_done(&last);
        c->n++;
        return rc;
    }
    c->n++;
    return cli_flush(b) ? TFTAP_EIO : 0;
}

int cli_calls(int argc, char **argv)
{
    store_calls_filter f = {NULL, NULL, 0};
    int all = 0;
    const struct cli_opt opts[] = {{"--method", &f.method, NULL, 0},
                                   {"--type", &f.type, NULL, 0},
                                   {"--failed", NULL, &f.failed_only, 0},
                                   {"--all", NULL, &all, 0},
                                   {0}};
    struct cli_read r;
    int rc = cli_read_begin(argc, argv, opts, usage_text, 1, 1, &r);
    if (rc != CLI_READ_GO)
        return rc;
    int64_t run = r.run;
    rc = cli_filter_check(&r.s, &r.path, &run, 1, CLI_FILTER_METHOD, f.method);
    if (!rc)
        rc = cli_filter_check(&r.s, &r.path, &run, 1, CLI_FILTER_TYPE, f.type);
    if (rc) {
        cli_read_done(&r);
        return rc;
    }
    cli_verdict v;
    /* Naming a go-plugin method asks for it. */
    const char *m =
        f.method ? (strrchr(f.method, '/') ? strrchr(f.method, '/') + 1 : f.method) : "";
    int plumbing_asked = strcasecmp(m, "StreamStdio") == 0 || strcasecmp(m, "StartStream") == 0 ||
                         strcasecmp(m, "Shutdown") == 0 || strcasecmp(m, "Check") == 0;
    struct calls_ctx c = {TFTAP_BUF_INIT, r.json, 0, f.failed_only, &v, all || plumbing_asked, 0,
                          NULL,           0,      0};
    /* The verdict first; --failed keeps the answers core rejects too, which
     * v_calls.failed does not know (they come from tftap check). */
    rc = cli_verdict_read(r.s, r.run, 0, &v);
    f.failed_only = 0;
    if (!rc && !r.json && (cli_verdict_failed(&v) || v.running)) {
        cli_verdict_line(&v, r.run, &c.out);
        tftap_buf_putc(&c.out, '\n');
    }
    if (!rc)
        rc = store_calls_query(r.s, r.run, &f, each_call, &c);
    int exit_code = 0;
    if (rc) {
        if (rc != TFTAP_EIO)
            cli_error("reading %s: %s", r.path, store_errmsg(r.s));
        exit_code = 1;
    } else if (r.json) {
        tftap_buf_puts(&c.out, c.n ? "\n]\n" : "[]\n");
        exit_code = cli_flush(&c.out);
    } else if (c.n) {
        print_rows(&c);
        if (c.hidden)
            tftap_buf_printf(&c.out, "(%d go-plugin housekeeping call%s not shown: --all)\n",
                             c.hidden, c.hidden == 1 ? "" : "s");
        exit_code = cli_flush(&c.out);
    } else if (c.n == 0) {
        exit_code = cli_flush(&c.out);
        fprintf(stderr, "no calls in run %lld%s\n", (long long)r.run,
                f.method || f.type || c.failed_only ? " match the filters" : "");
    }
    rows_free(&c);
    cli_verdict_done(&v);
    tftap_buf_done(&c.out);
    cli_read_done(&r);
    return exit_code;
}
