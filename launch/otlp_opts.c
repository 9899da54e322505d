/* launch: the OTLP options of tftap run and tftap wrap, and what a shim reads
 * of them from its environment: where its provider's calls go as spans,
 * with which trace, headers and resource, and whether with values
 * (docs/otlp.md). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "launch/launch_int.h"
#include "otlp/otlp.h"

int launch_otlp_url_ok(const char *url)
{
    return url != NULL && (strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0) &&
           strlen(url) > 8;
}

static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

static int otlp_values_env(void)
{
    const char *v = env_nonempty("TFTAP_OTLP_VALUES");
    return v != NULL && (strcmp(v, "1") == 0 || strcmp(v, "true") == 0);
}

void run_otlp_env(const char *url, int values, int at_end)
{
    if (url != NULL && setenv("TFTAP_OTLP", url, 1) != 0)
        launch_error("cannot set TFTAP_OTLP: %s; no spans", strerror(errno));
    if (values && setenv("TFTAP_OTLP_VALUES", "1", 1) != 0)
        launch_error("cannot set TFTAP_OTLP_VALUES: %s; spans without values", strerror(errno));
    /* Values leave only once core's marks are known: the run's end. */
    if (at_end && (values || otlp_values_env()) && setenv("TFTAP_OTLP_AT_END", "1", 1) != 0)
        launch_error("cannot set TFTAP_OTLP_AT_END: %s; no spans", strerror(errno));
    const char *tp = getenv("TRACEPARENT");
    uint8_t t[16], p[8];
    if (tp != NULL && otlp_traceparent_parse(tp, t, p, NULL) == 0)
        return; /* the CLI's trace: every provider's spans go under it */
    const char *mine = getenv("TFTAP_OTLP");
    char *env_url = otlp_endpoint_from_env(NULL);
    int wanted = (mine != NULL && mine[0] != '\0') || env_url != NULL;
    free(env_url);
    if (!wanted || getenv("TFTAP_OTLP_TRACE_ID") != NULL)
        return;
    /* One trace for the whole run, so its providers' spans are found together. */
    char hex[33];
    if (getrandom(t, sizeof t, 0) != (ssize_t)sizeof t)
        return; /* each provider's spans then make traces of their own */
    t[0] |= 1;  /* never the invalid all-zero id */
    tftap_hex_encode(t, sizeof t, hex);
    hex[32] = '\0';
    (void)setenv("TFTAP_OTLP_TRACE_ID", hex, 1);
}

int launch_otlp_config(const char *meta_url, int meta_values, struct otlp_config *oc, char **owned)
{
    *owned = NULL;
    memset(oc, 0, sizeof *oc);
    /* tftap run exports them itself (run_otlp_env). */
    if (!meta_url && env_nonempty("TFTAP_OTLP_AT_END") && otlp_values_env())
        return 0;
    const char *url = meta_url ? meta_url : env_nonempty("TFTAP_OTLP");
    if (url == NULL) {
        /* Only the variables: their protocol must be ours. */
        const char *proto = env_nonempty("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");
        if (proto == NULL)
            proto = env_nonempty("OTEL_EXPORTER_OTLP_PROTOCOL");
        char *u = otlp_endpoint_from_env(NULL);
        if (u == NULL)
            return 0;
        if (proto != NULL && strcmp(proto, "http/protobuf") != 0) {
            launch_error("OTEL_EXPORTER_OTLP_PROTOCOL is %s; tftap exports spans with "
                         "http/protobuf only (--otlp URL): no spans",
                         proto);
            free(u);
            return 0;
        }
        *owned = u;
        url = u;
    }
    oc->endpoint = url;
    const char *tp = env_nonempty("TRACEPARENT");
    uint8_t t[16], p[8];
    if (tp != NULL && otlp_traceparent_parse(tp, t, p, NULL) == 0)
        oc->traceparent = tp;
    const char *tid = env_nonempty("TFTAP_OTLP_TRACE_ID");
    if (tid != NULL && strlen(tid) == 32 && strspn(tid, "0123456789abcdef") == 32)
        oc->trace_id = tid;
    oc->headers = env_nonempty("OTEL_EXPORTER_OTLP_TRACES_HEADERS");
    if (oc->headers == NULL)
        oc->headers = env_nonempty("OTEL_EXPORTER_OTLP_HEADERS");
    oc->service = env_nonempty("OTEL_SERVICE_NAME");
    oc->resource_attrs = env_nonempty("OTEL_RESOURCE_ATTRIBUTES");
    oc->values = meta_values || otlp_values_env();
    return 1;
}
