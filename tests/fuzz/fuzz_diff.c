/* libFuzzer target: the run diff and the schema diff over JSON read from a
 * database or from a file a user hands `tftap schema` (so any JSON). An
 * input is up to six texts separated by NUL bytes: request and response of
 * a call in run A, the same in run B, then two providers-schema documents.
 * Malformed JSON must be refused cleanly; anything accepted must render. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const rpcs[] = {"PlanResourceChange", "ApplyResourceChange",   "ReadResource",
                                   "ReadDataSource",     "UpgradeResourceState",  "CallFunction",
                                   "GetProviderSchema",  "ValidateResourceConfig"};

/* Run A's call handed over again (analysis_diff_calls_streamed). */
static int stream_one(void *ctx, analysis_diff_json_fn fn, void *fctx)
{
    const analysis_diff_call *c = ctx;
    return fn(fctx, c->call_id, c->request_json, c->response_json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    const char *part[6] = {"", "", "", "", "", ""};
    size_t np = 0;
    const char *p = copy, *end = copy + size;
    while (np < 6 && p <= end) {
        part[np++] = p;
        p += strlen(p) + 1;
    }
    const char *rpc = rpcs[size % (sizeof rpcs / sizeof rpcs[0])];
    analysis_diff_call a = {.call_id = 1,
                            .provider = "p",
                            .rpc = rpc,
                            .type_name = "t",
                            .address = (size & 8) ? "t.a" : NULL,
                            .has_status = 1,
                            .request_json = part[0],
                            .response_json = part[1],
                            .schema_version = 0};
    analysis_diff_call b = a;
    b.call_id = 2;
    b.request_json = part[2];
    b.response_json = part[3];
    const char *ign[] = {".id*"};
    analysis_diff_opts o = {.ignore = ign, .nignore = (size & 16) ? 1 : 0};
    analysis_diff *d = NULL;
    tftap_buf out = TFTAP_BUF_INIT;
    int rc = analysis_diff_calls(&a, 1, &b, 1, &o, &d);
    if (rc == 0) {
        for (int f = 0; f < 3; f++) {
            tftap_buf_reset(&out);
            if (analysis_diff_render(d, (enum analysis_diff_format)f, ANALYSIS_DIFF_COLOR, 2000,
                                     &out) != 0 ||
                out.len == 0)
                abort();
        }
    }
    /* Run A summarized and streamed (what analysis_diff_runs does): the
     * same outcome, the same JSON. */
    analysis_diff_call sum = a;
    analysis_diff *ds = NULL;
    int src = analysis_diff_call_summarize(&sum);
    if (src == 0) {
        sum.request_json = sum.response_json = NULL;
        src = analysis_diff_calls_streamed(&sum, 1, stream_one, &a, &b, 1, &o, &ds);
    }
    if ((src == 0) != (rc == 0))
        abort();
    if (rc == 0) {
        tftap_buf x = TFTAP_BUF_INIT, y = TFTAP_BUF_INIT;
        if (analysis_diff_render(d, ANALYSIS_DIFF_JSON, 0, 0, &x) != 0 ||
            analysis_diff_render(ds, ANALYSIS_DIFF_JSON, 0, 0, &y) != 0 || x.len != y.len ||
            memcmp(x.data, y.data, x.len) != 0)
            abort();
        tftap_buf_done(&x);
        tftap_buf_done(&y);
    }
    analysis_diff_free(d);
    analysis_diff_free(ds);
    analysis_schema_diff *sd = NULL;
    if (analysis_schema_diff_new(part[4], strlen(part[4]), part[5], strlen(part[5]), &sd) == 0) {
        for (int f = 0; f < 3; f++) {
            tftap_buf_reset(&out);
            if (analysis_schema_diff_render(sd, (enum analysis_diff_format)f, 0, f == 1, &out) != 0)
                abort();
        }
        analysis_schema_diff_free(sd);
    }
    tftap_buf e = TFTAP_BUF_INIT, addr = TFTAP_BUF_INIT;
    if (analysis_schema_entry(part[4], strlen(part[4]), NULL, &e, &addr) == 0) {
        tftap_buf_reset(&out);
        if (analysis_schema_render_text(e.data, e.len, tftap_buf_cstr(&addr), &out) != 0)
            abort();
    }
    tftap_buf_done(&e);
    tftap_buf_done(&addr);
    tftap_buf_done(&out);
    free(copy);
    return 0;
}
