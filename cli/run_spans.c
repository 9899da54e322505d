/* cli: a run's spans with values (--otlp-values), exported by tftap run
 * from the run's record once the values core marks sensitive are redacted
 * in it (run_secrets.c): a span carries a call's values, and they must
 * not leave the machine before those marks are known, which is only at the
 * run's end. The shims export nothing then (TFTAP_OTLP_AT_END). Spans are
 * what a shim would have made of each call (docs/otlp.md). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/run_int.h"
#include "otlp/otlp.h"
#include "store/store.h"

/* How long the end of tftap run waits for the receiver to take the spans. */
#define RUN_SPANS_FLUSH_MS 10000

struct spans {
    otlp_exporter *ox;
    size_t n;
};

static int add_span(void *ctx, const store_call_row *c)
{
    struct spans *sp = ctx;
    if (c->in_flight || c->method == NULL || c->method[0] == '\0')
        return 0; /* never answered: no span, as a shim would do */
    tftap_buf first = TFTAP_BUF_INIT;
    int errors = 0;
    if (c->status_code == 0 && c->response_json != NULL)
        errors = otlp_error_diagnostics(c->response_json, strlen(c->response_json), &first);
    otlp_span s = {
        .method = c->method,
        .provider = c->provider,
        .version = c->provider_version,
        .type = c->type_name,
        .status_message = c->status_message,
        .error_count = errors,
        .error_summary = first.len ? tftap_buf_cstr(&first) : NULL,
        .request_json = c->request_json,
        .response_json = c->response_json,
        .start_us = c->started_us,
        .end_us = c->ended_us,
        .grpc_status = c->has_status ? c->status_code : 0,
        .request_bytes = (uint64_t)c->request_bytes,
        .response_bytes = (uint64_t)c->response_bytes,
        .call_id = (uint64_t)c->call_seq,
        .run_id = c->run_id,
    };
    otlp_exporter_add(sp->ox, &s);
    sp->n++;
    tftap_buf_done(&first);
    return 0;
}

static void span_log(void *ctx, const char *line)
{
    (void)ctx;
    cli_error("otlp: %s", line);
}

void run_export_spans(store *s, int64_t run_id)
{
    const char *at_end = getenv("TFTAP_OTLP_AT_END");
    if (at_end == NULL || at_end[0] == '\0')
        return;
    /* Ours to export now: the check that keeps the shims from it is not
     * for this process. */
    unsetenv("TFTAP_OTLP_AT_END");
    otlp_config oc;
    char *owned = NULL;
    if (cli_otlp_config(NULL, 1, &oc, &owned) != 1)
        return;
    oc.log = span_log;
    struct spans sp = {NULL, 0};
    int rc = otlp_exporter_open(&oc, &sp.ox);
    if (rc != 0) {
        cli_error("otlp: cannot export the run's spans to %s: %s", oc.endpoint, tftap_strerror(rc));
    } else {
        rc = store_calls_each(s, run_id, NULL, NULL, add_span, &sp);
        if (rc != 0)
            cli_error("otlp: cannot read run %lld's calls: %s", (long long)run_id,
                      tftap_strerror(rc));
        otlp_exporter_close(sp.ox, RUN_SPANS_FLUSH_MS);
    }
    free(owned);
}
