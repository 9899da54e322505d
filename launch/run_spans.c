/* launch: a run's spans with values (--otlp-values), exported by tftap run
 * from the run's record once the values core marks sensitive are redacted
 * in it (run_secrets.c): a span carries a call's values, and they must
 * not leave the machine before those marks are known, which is only at the
 * run's end. The shims export nothing then (TFTAP_OTLP_AT_END). Spans are
 * what a shim would have made of each call (recorder_export_spans). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "launch/launch_int.h"
#include "otlp/otlp.h"
#include "recorder/recorder.h"
#include "store/store.h"

/* How long the end of tftap run waits for the receiver to take the spans. */
#define RUN_SPANS_FLUSH_MS 10000

static void span_log(void *ctx, const char *line)
{
    (void)ctx;
    launch_error("otlp: %s", line);
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
    if (launch_otlp_config(NULL, 1, &oc, &owned) != 1)
        return;
    oc.log = span_log;
    oc.words = 1; /* from the record, redacted: the provider's words may leave */
    otlp_exporter *ox = NULL;
    int rc = otlp_exporter_open(&oc, &ox);
    if (rc != 0) {
        launch_error("otlp: cannot export the run's spans to %s: %s", oc.endpoint,
                     tftap_strerror(rc));
    } else {
        int64_t n = recorder_export_spans(s, run_id, 0, ox);
        if (n < 0)
            launch_error("otlp: cannot read run %lld's calls: %s", (long long)run_id,
                         tftap_strerror((int)n));
        otlp_exporter_close(ox, RUN_SPANS_FLUSH_MS);
    }
    free(owned);
}
