/* tftap calls RUN: the provider calls of one run. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_store.h"

static const char usage_text[] =
    "usage: tftap calls RUN [--method M] [--type T] [--db PATH] [--json]\n\n"
    "List the gRPC calls recorded in RUN (an id from 'tftap runs', or 'last') in start\n"
    "order. --method keeps one method (PlanResourceChange or a full path), --type one\n"
    "resource/data source type. --json prints each call with its decoded messages.\n";

struct calls_ctx {
    tftap_buf out;
    int json;
    int n;
};

static int each_call(void *ctx, const store_call_row *r)
{
    struct calls_ctx *c = ctx;
    tftap_buf *b = &c->out;
    if (c->json) {
        tftap_buf_puts(b, c->n ? ",\n  " : "[\n  ");
        tftap_buf_printf(b, "{\"id\":%lld,\"run_id\":%lld,\"process_id\":%lld,\"call_seq\":%lld",
                         (long long)r->id, (long long)r->run_id, (long long)r->process_id,
                         (long long)r->call_seq);
        tftap_buf_puts(b, ",\"provider\":");
        cli_json_str(b, r->provider);
        tftap_buf_puts(b, ",\"method\":");
        cli_json_str(b, r->method);
        tftap_buf_puts(b, ",\"rpc\":");
        cli_json_str(b, r->rpc);
        tftap_buf_printf(b, ",\"stream\":%s,\"started_us\":%lld,\"ended_us\":",
                         r->stream ? "true" : "false", (long long)r->started_us);
        if (r->ended_us)
            tftap_buf_printf(b, "%lld", (long long)r->ended_us);
        else
            tftap_buf_puts(b, "null");
        if (r->has_status)
            tftap_buf_printf(b, ",\"status_code\":%d", r->status_code);
        else
            tftap_buf_puts(b, ",\"status_code\":null");
        tftap_buf_puts(b, ",\"status_message\":");
        cli_json_str(b, r->status_message);
        tftap_buf_printf(b,
                         ",\"request_bytes\":%lld,\"response_bytes\":%lld,\"request_count\":%lld,"
                         "\"response_count\":%lld",
                         (long long)r->request_bytes, (long long)r->response_bytes,
                         (long long)r->request_count, (long long)r->response_count);
        tftap_buf_puts(b, ",\"type_name\":");
        cli_json_str(b, r->type_name);
        tftap_buf_puts(b, ",\"address\":");
        cli_json_str(b, r->address);
        tftap_buf_puts(b, ",\"request\":");
        cli_json_raw(b, r->request_json);
        tftap_buf_puts(b, ",\"response\":");
        cli_json_raw(b, r->response_json);
        tftap_buf_puts(b, ",\"decode_error\":");
        cli_json_str(b, r->decode_error);
        tftap_buf_putc(b, '}');
    } else {
        char dur[32], status[24];
        cli_format_duration(r->started_us, r->ended_us, dur);
        if (!r->ended_us)
            snprintf(status, sizeof status, "in-flight");
        else if (r->has_status && r->status_code == 0)
            snprintf(status, sizeof status, "OK");
        else
            snprintf(status, sizeof status, "status=%d", r->status_code);
        if (c->n == 0)
            tftap_buf_printf(b, "%-6s %-5s %-32s %-24s %-10s %9s %9s %9s  %s\n", "CALL", "PROC",
                             "METHOD", "TYPE", "STATUS", "TIME", "REQ", "RESP", "ADDRESS");
        tftap_buf_printf(b, "%-6lld %-5lld %-32s %-24s %-10s %9s %9lld %9lld  %s%s%s\n",
                         (long long)r->id, (long long)r->process_id, r->rpc ? r->rpc : "?",
                         r->type_name ? r->type_name : "-", status, dur,
                         (long long)r->request_bytes, (long long)r->response_bytes,
                         r->address ? r->address : "-", r->decode_error ? "  ! " : "",
                         r->decode_error ? r->decode_error : "");
    }
    c->n++;
    return cli_flush(b) ? TFTAP_EIO : 0;
}

int cli_calls(int argc, char **argv)
{
    const char *db = NULL, *method = NULL, *type = NULL, *pos[1];
    int json = 0, help = 0, npos = 0;
    const struct cli_opt opts[] = {{"--method", &method, NULL}, {"--type", &type, NULL}, {0}};
    int rc = cli_store_args(argc, argv, opts, &db, &json, &help, pos, 1, &npos);
    if (!rc && !help && npos != 1) {
        cli_error("calls needs RUN (a run id or 'last')");
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
    struct calls_ctx c = {TFTAP_BUF_INIT, json, 0};
    rc = store_calls_each(s, run, method, type, each_call, &c);
    int exit_code = 0;
    if (rc) {
        if (rc != TFTAP_EIO)
            cli_error("reading %s: %s", path, store_errmsg(s));
        exit_code = 1;
    } else if (json) {
        tftap_buf_puts(&c.out, c.n ? "\n]\n" : "[]\n");
        exit_code = cli_flush(&c.out);
    } else if (c.n == 0) {
        fprintf(stderr, "no calls in run %lld%s\n", (long long)run,
                method || type ? " match the filters" : "");
    }
    tftap_buf_done(&c.out);
    store_close(s);
    return exit_code;
}
