/* otlp: trace context parsing, the encoded request read back with the
 * message definitions, and an exporter whose receiver is gone or whose
 * queue is full (drops counted and logged, nothing blocks). The real
 * receiver is tests/e2e/otlp.sh's. */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "otlp/otlp.h"
#include "otlp_trace.pb-c.h"
#include "tests/check.h"

static void test_traceparent(void)
{
    uint8_t t[16], p[8], f = 0;
    CHECK_INT_EQ(
        otlp_traceparent_parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", t, p, &f),
        0);
    CHECK_INT_EQ(t[0], 0x4b);
    CHECK_INT_EQ(t[15], 0x36);
    CHECK_INT_EQ(p[0], 0x00);
    CHECK_INT_EQ(p[7], 0xb7);
    CHECK_INT_EQ(f, 1);
    static const char *bad[] = {
        NULL,
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",   /* short */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-", /* 00 is exactly 55 */
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  /* forbidden version */
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  /* zero trace id */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  /* zero parent */
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  /* uppercase */
        "00-4bf92f3577b34da6a3ce929d0e0e473x-00f067aa0ba902b7-01",
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_INT_EQ(otlp_traceparent_parse(bad[i], t, p, &f), TFTAP_EDECODE);
    /* A later version may carry more after a dash. */
    CHECK_INT_EQ(otlp_traceparent_parse(
                     "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-xyz", t, p, &f),
                 0);
}

static void test_endpoint_env(void)
{
    char *e1[] = {"OTEL_EXPORTER_OTLP_ENDPOINT=http://h:4318/", NULL};
    char *u = otlp_endpoint_from_env(e1);
    CHECK_STR_EQ(u, "http://h:4318/v1/traces");
    free(u);
    char *e2[] = {"OTEL_EXPORTER_OTLP_ENDPOINT=http://h:4318",
                  "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://t:1/x", NULL};
    u = otlp_endpoint_from_env(e2);
    CHECK_STR_EQ(u, "http://t:1/x");
    free(u);
    char *e3[] = {"OTEL_EXPORTER_OTLP_ENDPOINT=", NULL};
    CHECK(otlp_endpoint_from_env(e3) == NULL);
}

static const Tftap__Otlp__AnyValue *attr(const Tftap__Otlp__Span *s, const char *key)
{
    for (size_t i = 0; i < s->n_attributes; i++)
        if (strcmp(s->attributes[i]->key, key) == 0)
            return s->attributes[i]->value;
    return NULL;
}

static void test_encode(void)
{
    otlp_config cfg = {
        .endpoint = "http://127.0.0.1:1/v1/traces",
        .traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        .words = 1,
    };
    otlp_span sp[2] = {
        {.method = "/tfplugin6.Provider/PlanResourceChange",
         .provider = "registry.opentofu.org/tftap/tftest6",
         .version = "0.1.0",
         .type = "tftest6_thing",
         .start_us = 1700000000000000,
         .end_us = 1700000000100000,
         .grpc_status = 0,
         .request_bytes = 120,
         .response_bytes = 340,
         .call_id = 7,
         .run_id = 3,
         .span_id = {1, 2, 3, 4, 5, 6, 7, 8}},
        {.method = "/tfplugin5.Provider/ApplyResourceChange",
         .grpc_status = 2,
         .status_message = "boom",
         .start_us = 1700000000200000,
         .end_us = 1700000000300000,
         .span_id = {9, 9, 9, 9, 9, 9, 9, 9}},
    };
    tftap_buf b = TFTAP_BUF_INIT;
    CHECK_INT_EQ(otlp_encode(&cfg, sp, 2, &b), 0);
    Tftap__Otlp__ExportTraceServiceRequest *r =
        tftap__otlp__export_trace_service_request__unpack(NULL, b.len, (uint8_t *)b.data);
    CHECK(r != NULL);
    if (r == NULL)
        return;
    CHECK_INT_EQ(r->n_resource_spans, 1);
    const Tftap__Otlp__ResourceSpans *rs = r->resource_spans[0];
    CHECK_STR_EQ(rs->resource->attributes[0]->key, "service.name");
    CHECK_STR_EQ(rs->resource->attributes[0]->value->string_value, "tftap");
    CHECK_INT_EQ(rs->n_scope_spans, 1);
    CHECK_STR_EQ(rs->scope_spans[0]->scope->name, "tftap");
    CHECK_INT_EQ(rs->scope_spans[0]->n_spans, 2);
    const Tftap__Otlp__Span *s = rs->scope_spans[0]->spans[0];
    CHECK_INT_EQ(s->trace_id.len, 16);
    CHECK_INT_EQ(s->trace_id.data[0], 0x4b);
    CHECK_INT_EQ(s->parent_span_id.len, 8);
    CHECK_INT_EQ(s->parent_span_id.data[7], 0xb7);
    CHECK_INT_EQ(s->span_id.len, 8);
    CHECK_INT_EQ(s->span_id.data[7], 8);
    CHECK_STR_EQ(s->name, "PlanResourceChange");
    CHECK_INT_EQ(s->kind, TFTAP__OTLP__SPAN__SPAN_KIND__SPAN_KIND_CLIENT);
    CHECK(s->start_time_unix_nano == 1700000000000000000ull);
    CHECK(s->end_time_unix_nano == 1700000000100000000ull);
    CHECK_STR_EQ(attr(s, "rpc.service")->string_value, "tfplugin6.Provider");
    CHECK_STR_EQ(attr(s, "rpc.method")->string_value, "PlanResourceChange");
    CHECK_STR_EQ(attr(s, "tftap.provider")->string_value, "registry.opentofu.org/tftap/tftest6");
    CHECK_STR_EQ(attr(s, "tftap.type")->string_value, "tftest6_thing");
    CHECK_INT_EQ(attr(s, "tftap.request.bytes")->int_value, 120);
    CHECK_INT_EQ(attr(s, "tftap.response.bytes")->int_value, 340);
    CHECK_INT_EQ(attr(s, "tftap.run_id")->int_value, 3);
    CHECK_INT_EQ(attr(s, "rpc.grpc.status_code")->int_value, 0);
    CHECK(attr(s, "tftap.address") == NULL);
    CHECK_INT_EQ(s->status->code, TFTAP__OTLP__STATUS__STATUS_CODE__STATUS_CODE_UNSET);
    s = rs->scope_spans[0]->spans[1];
    CHECK_STR_EQ(s->name, "ApplyResourceChange");
    CHECK_INT_EQ(s->status->code, TFTAP__OTLP__STATUS__STATUS_CODE__STATUS_CODE_ERROR);
    CHECK_STR_EQ(s->status->message, "boom");
    CHECK_INT_EQ(attr(s, "rpc.grpc.status_code")->int_value, 2);
    CHECK(attr(s, "tftap.provider") == NULL);
    CHECK(attr(s, "tftap.teardown") == NULL);
    CHECK(attr(s, "tftap.status.withheld") == NULL);
    tftap__otlp__export_trace_service_request__free_unpacked(r, NULL);

    /* Spans that leave while the run lasts: failed, without the provider's
     * words (they may quote a secret known only at the run's end). */
    cfg.words = 0;
    tftap_buf_reset(&b);
    CHECK_INT_EQ(otlp_encode(&cfg, sp, 2, &b), 0);
    r = tftap__otlp__export_trace_service_request__unpack(NULL, b.len, (uint8_t *)b.data);
    CHECK(r != NULL);
    if (r == NULL)
        return;
    s = r->resource_spans[0]->scope_spans[0]->spans[1];
    CHECK_INT_EQ(s->status->code, TFTAP__OTLP__STATUS__STATUS_CODE__STATUS_CODE_ERROR);
    CHECK_STR_EQ(s->status->message, "");
    CHECK(attr(s, "tftap.status.withheld")->bool_value);
    CHECK(attr(r->resource_spans[0]->scope_spans[0]->spans[0], "tftap.status.withheld") == NULL);
    tftap__otlp__export_trace_service_request__free_unpacked(r, NULL);
    cfg.words = 1;

    /* go-plugin's Shutdown ending UNAVAILABLE as the provider exits: expected. */
    otlp_span td = {.method = "/plugin.GRPCController/Shutdown", .grpc_status = 14};
    tftap_buf_reset(&b);
    CHECK_INT_EQ(otlp_encode(&cfg, &td, 1, &b), 0);
    r = tftap__otlp__export_trace_service_request__unpack(NULL, b.len, (uint8_t *)b.data);
    CHECK(r != NULL);
    if (r != NULL) {
        s = r->resource_spans[0]->scope_spans[0]->spans[0];
        CHECK_INT_EQ(s->status->code, TFTAP__OTLP__STATUS__STATUS_CODE__STATUS_CODE_UNSET);
        CHECK(attr(s, "tftap.teardown") != NULL && attr(s, "tftap.teardown")->bool_value);
        CHECK_INT_EQ(attr(s, "rpc.grpc.status_code")->int_value, 14);
        tftap__otlp__export_trace_service_request__free_unpacked(r, NULL);
    }

    /* UNIMPLEMENTED from a method a provider built before it lacks (core
     * reads it as none): an expected close, no error. The same status from
     * a method every provider has stays an error. */
    otlp_span opt[2] = {
        {.method = "/tfplugin5.Provider/GetResourceIdentitySchemas", .grpc_status = 12},
        {.method = "/tfplugin5.Provider/PlanResourceChange", .grpc_status = 12}};
    tftap_buf_reset(&b);
    CHECK_INT_EQ(otlp_encode(&cfg, opt, 2, &b), 0);
    r = tftap__otlp__export_trace_service_request__unpack(NULL, b.len, (uint8_t *)b.data);
    CHECK(r != NULL);
    if (r != NULL) {
        s = r->resource_spans[0]->scope_spans[0]->spans[0];
        CHECK_INT_EQ(s->status->code, TFTAP__OTLP__STATUS__STATUS_CODE__STATUS_CODE_UNSET);
        CHECK(attr(s, "tftap.expected_close") != NULL &&
              attr(s, "tftap.expected_close")->bool_value);
        CHECK(attr(s, "tftap.teardown") == NULL);
        s = r->resource_spans[0]->scope_spans[0]->spans[1];
        CHECK_INT_EQ(s->status->code, TFTAP__OTLP__STATUS__STATUS_CODE__STATUS_CODE_ERROR);
        CHECK(attr(s, "tftap.expected_close") == NULL);
        tftap__otlp__export_trace_service_request__free_unpacked(r, NULL);
    }

    /* Without a traceparent: the given trace, no parent. */
    otlp_config c2 = {.endpoint = "http://x/", .trace_id = "0123456789abcdef0123456789abcdef"};
    tftap_buf_reset(&b);
    CHECK_INT_EQ(otlp_encode(&c2, sp, 1, &b), 0);
    r = tftap__otlp__export_trace_service_request__unpack(NULL, b.len, (uint8_t *)b.data);
    CHECK(r != NULL);
    if (r != NULL) {
        s = r->resource_spans[0]->scope_spans[0]->spans[0];
        CHECK_INT_EQ(s->trace_id.data[0], 0x01);
        CHECK_INT_EQ(s->trace_id.data[15], 0xef);
        CHECK_INT_EQ(s->parent_span_id.len, 0);
        tftap__otlp__export_trace_service_request__free_unpacked(r, NULL);
    }
    otlp_config c3 = {.endpoint = "http://x/", .traceparent = "junk"};
    CHECK_INT_EQ(otlp_encode(&c3, sp, 1, &b), TFTAP_EINVAL);
    tftap_buf_done(&b);
}

static void test_value_cut(void)
{
    CHECK_INT_EQ(otlp_value_cut("abc", 5), 3);
    CHECK_INT_EQ(otlp_value_cut("abc", 3), 3);
    CHECK_INT_EQ(otlp_value_cut("abcdef", 4), 4);
    /* "a" then e-acute (2 bytes): a cut inside the character backs off. */
    CHECK_INT_EQ(otlp_value_cut("a\xc3\xa9z", 2), 1);
    CHECK_INT_EQ(otlp_value_cut("a\xc3\xa9z", 3), 3);
    /* A 4-byte character, cut after 2 of its bytes. */
    CHECK_INT_EQ(otlp_value_cut("\xf0\x9f\x98\x80!", 2), 0);
    CHECK_INT_EQ(otlp_value_cut("", 0), 0);
}

static void test_diagnostics(void)
{
    tftap_buf first = TFTAP_BUF_INIT;
    const char *two = "{\"planned_state\":null,\"diagnostics\":[{\"severity\":\"WARNING\","
                      "\"summary\":\"w\"},{\"severity\":\"ERROR\",\"summary\":\"first bad\","
                      "\"detail\":\"d\"},{\"severity\":\"ERROR\",\"summary\":\"second\"}]}";
    CHECK_INT_EQ(otlp_error_diagnostics(two, strlen(two), &first), 2);
    CHECK_STR_EQ(tftap_buf_cstr(&first), "first bad");
    const char *warn = "{\"diagnostics\":[{\"severity\":\"WARNING\",\"summary\":\"w\"}]}";
    CHECK_INT_EQ(otlp_error_diagnostics(warn, strlen(warn), NULL), 0);
    const char *none = "{\"diagnostics\":[]}";
    CHECK_INT_EQ(otlp_error_diagnostics(none, strlen(none), NULL), 0);
    /* A stream's messages (an array) count none, as in v_calls. */
    const char *arr = "[{\"diagnostics\":[{\"severity\":\"ERROR\",\"summary\":\"x\"}]}]";
    CHECK_INT_EQ(otlp_error_diagnostics(arr, strlen(arr), NULL), 0);
    const char *bad = "{\"diagnostics\":[{\"severity\":\"ERROR\"";
    CHECK_INT_EQ(otlp_error_diagnostics(bad, strlen(bad), NULL), 0);
    const char *num = "{\"diagnostics\":[{\"severity\":1},{\"severity\":\"ERROR\"}]}";
    tftap_buf_reset(&first);
    CHECK_INT_EQ(otlp_error_diagnostics(num, strlen(num), &first), 1);
    CHECK_INT_EQ(first.len, 0); /* no summary */
    CHECK_INT_EQ(otlp_error_diagnostics(NULL, 0, NULL), 0);
    tftap_buf_done(&first);
}

static void test_resource_parse(void)
{
    tftap_buf b = TFTAP_BUF_INIT;
    CHECK_INT_EQ(otlp_resource_parse(" a=1 , b = x%20y%2C ,,c=", &b), 3);
    CHECK_INT_EQ(b.len, sizeof "a\0001\000b\000x y,\000c\000\000" - 1);
    CHECK(memcmp(b.data, "a\0001\000b\000x y,\000c\000\000", b.len) == 0);
    CHECK_INT_EQ(otlp_resource_parse(NULL, &b), 0);
    static const char *bad[] = {"a", "=x", " =x", "a=%zz", "a=%2", "a=%00", "a b=1", "a=1,b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tftap_buf_reset(&b);
        CHECK_INT_EQ(otlp_resource_parse(bad[i], &b), TFTAP_EDECODE);
        CHECK_INT_EQ(b.len, 0);
    }
    tftap_buf many = TFTAP_BUF_INIT;
    for (int i = 0; i < 65; i++)
        tftap_buf_printf(&many, "%sk%d=v", i ? "," : "", i);
    tftap_buf_reset(&b);
    CHECK_INT_EQ(otlp_resource_parse(tftap_buf_cstr(&many), &b), TFTAP_ELIMIT);
    tftap_buf_done(&many);
    tftap_buf_done(&b);
}

static const Tftap__Otlp__AnyValue *rattr(const Tftap__Otlp__Resource *r, const char *key)
{
    for (size_t i = 0; i < r->n_attributes; i++)
        if (strcmp(r->attributes[i]->key, key) == 0)
            return r->attributes[i]->value;
    return NULL;
}

/* Error diagnostics in an OK answer, values, the resource from the
 * environment's variables. */
static void test_encode_more(void)
{
    otlp_config cfg = {.endpoint = "http://x/",
                       .words = 1,
                       .service = "svc",
                       .resource_attrs = "service.name=ignored,team=infra%20ops,service.version=9"};
    otlp_span sp = {.method = "/tfplugin6.Provider/PlanResourceChange",
                    .error_count = 2,
                    .error_summary = "planned failure",
                    .request_json = "{\"a\":1}",
                    .request_truncated = 1,
                    .response_withheld = 1,
                    .span_id = {1}};
    tftap_buf b = TFTAP_BUF_INIT;
    CHECK_INT_EQ(otlp_encode(&cfg, &sp, 1, &b), 0);
    Tftap__Otlp__ExportTraceServiceRequest *r =
        tftap__otlp__export_trace_service_request__unpack(NULL, b.len, (uint8_t *)b.data);
    CHECK(r != NULL);
    if (r != NULL) {
        const Tftap__Otlp__Resource *res = r->resource_spans[0]->resource;
        CHECK_STR_EQ(rattr(res, "service.name")->string_value, "svc");
        CHECK_STR_EQ(rattr(res, "service.version")->string_value, "9");
        CHECK_STR_EQ(rattr(res, "team")->string_value, "infra ops");
        CHECK_INT_EQ(res->n_attributes, 3);
        const Tftap__Otlp__Span *s = r->resource_spans[0]->scope_spans[0]->spans[0];
        CHECK_INT_EQ(s->status->code, TFTAP__OTLP__STATUS__STATUS_CODE__STATUS_CODE_ERROR);
        CHECK_STR_EQ(s->status->message, "planned failure");
        CHECK_INT_EQ(attr(s, "tftap.diagnostics.errors")->int_value, 2);
        CHECK_STR_EQ(attr(s, "tftap.request.json")->string_value, "{\"a\":1}");
        CHECK(attr(s, "tftap.request.truncated")->bool_value);
        CHECK(attr(s, "tftap.response.json") == NULL);
        CHECK(attr(s, "tftap.response.withheld")->bool_value);
        tftap__otlp__export_trace_service_request__free_unpacked(r, NULL);
    }
    /* The service from the attributes when OTEL_SERVICE_NAME is not set; a
     * malformed list is ignored whole. */
    otlp_config c2 = {.endpoint = "http://x/", .resource_attrs = "service.name=from-attrs"};
    otlp_config c3 = {.endpoint = "http://x/", .resource_attrs = "team=a,broken"};
    otlp_span ok = {.method = "/plugin.GRPCController/Shutdown", .error_count = 1, .span_id = {1}};
    for (int i = 0; i < 2; i++) {
        tftap_buf_reset(&b);
        CHECK_INT_EQ(otlp_encode(i ? &c3 : &c2, &ok, 1, &b), 0);
        r = tftap__otlp__export_trace_service_request__unpack(NULL, b.len, (uint8_t *)b.data);
        CHECK(r != NULL);
        if (r == NULL)
            continue;
        const Tftap__Otlp__Resource *res = r->resource_spans[0]->resource;
        CHECK_STR_EQ(rattr(res, "service.name")->string_value, i ? "tftap" : "from-attrs");
        CHECK(rattr(res, "team") == NULL);
        /* Teardown is never an error, diagnostics or not. */
        CHECK_INT_EQ(r->resource_spans[0]->scope_spans[0]->spans[0]->status->code,
                     TFTAP__OTLP__STATUS__STATUS_CODE__STATUS_CODE_UNSET);
        tftap__otlp__export_trace_service_request__free_unpacked(r, NULL);
    }
    tftap_buf_done(&b);
}

/* ---- a receiver of our own: one HTTP/1.1 POST per connection ---------------- */

struct recv {
    int fd;
    int want; /* connections to serve */
    tftap_buf bodies[4];
    int got;
};

static void *recv_main(void *arg)
{
    struct recv *rv = arg;
    while (rv->got < rv->want) {
        int c = accept(rv->fd, NULL, NULL);
        if (c < 0)
            break;
        tftap_buf in = TFTAP_BUF_INIT;
        char buf[65536];
        size_t head = 0, clen = 0;
        int continued = 0;
        for (;;) {
            ssize_t n = read(c, buf, sizeof buf);
            if (n <= 0)
                break;
            tftap_buf_append(&in, buf, (size_t)n);
            const char *end = in.data ? memmem(in.data, in.len, "\r\n\r\n", 4) : NULL;
            if (end && head == 0) {
                head = (size_t)(end - in.data) + 4;
                const char *cl = strcasestr(in.data, "content-length:");
                clen = cl && cl < end ? strtoul(cl + 15, NULL, 10) : 0;
                if (!continued && strcasestr(in.data, "expect: 100-continue") != NULL) {
                    continued = 1;
                    (void)!write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
                }
            }
            if (head && in.len >= head + clen)
                break;
        }
        if (head && rv->got < 4)
            tftap_buf_append(&rv->bodies[rv->got], in.data + head, in.len - head);
        rv->got++;
        static const char ok[] =
            "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        (void)!write(c, ok, sizeof ok - 1);
        close(c);
        tftap_buf_done(&in);
    }
    return NULL;
}

static int recv_start(struct recv *rv, int want, pthread_t *t)
{
    memset(rv, 0, sizeof *rv);
    rv->want = want;
    rv->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t n = sizeof a;
    if (rv->fd < 0 || bind(rv->fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(rv->fd, 4) != 0 || getsockname(rv->fd, (struct sockaddr *)&a, &n) != 0 ||
        pthread_create(t, NULL, recv_main, rv) != 0)
        return -1;
    return ntohs(a.sin_port);
}

/* What a real POST carries: values cut at OTLP_VALUE_MAX (on a character
 * boundary, marked), and none at all unless the configuration asks. */
static void test_export_values(void)
{
    struct recv rv;
    pthread_t t;
    int port = recv_start(&rv, 2, &t);
    CHECK(port > 0);
    if (port <= 0)
        return;
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/traces", port);
    tftap_buf big = TFTAP_BUF_INIT;
    tftap_buf_putc(&big, 'a');
    while (big.len < OTLP_VALUE_MAX + 100)
        tftap_buf_puts(&big, "\xc3\xa9");
    otlp_span sp = {.method = "/tfplugin6.Provider/ApplyResourceChange",
                    .request_json = tftap_buf_cstr(&big),
                    .response_json = "{\"new_state\":null}",
                    .span_id = {1}};
    for (int values = 1; values >= 0; values--) {
        otlp_config cfg = {.endpoint = url, .values = values, .batch_ms = 10, .timeout_ms = 5000};
        otlp_exporter *e = NULL;
        CHECK_INT_EQ(otlp_exporter_open(&cfg, &e), 0);
        otlp_exporter_add(e, &sp);
        otlp_exporter_close(e, 5000);
    }
    pthread_join(t, NULL);
    close(rv.fd);
    CHECK_INT_EQ(rv.got, 2);
    for (int i = 0; i < 2 && i < rv.got; i++) {
        Tftap__Otlp__ExportTraceServiceRequest *r =
            tftap__otlp__export_trace_service_request__unpack(NULL, rv.bodies[i].len,
                                                              (uint8_t *)rv.bodies[i].data);
        CHECK(r != NULL);
        if (r == NULL)
            continue;
        const Tftap__Otlp__Span *s = r->resource_spans[0]->scope_spans[0]->spans[0];
        const Tftap__Otlp__AnyValue *rq = attr(s, "tftap.request.json");
        if (i == 0) {
            /* 'a' then 2-byte characters: OTLP_VALUE_MAX (even) falls inside one. */
            CHECK(rq != NULL && strlen(rq->string_value) == OTLP_VALUE_MAX - 1);
            CHECK(rq != NULL && memcmp(rq->string_value, big.data, OTLP_VALUE_MAX - 1) == 0);
            CHECK(attr(s, "tftap.request.truncated")->bool_value);
            CHECK_STR_EQ(attr(s, "tftap.response.json")->string_value, "{\"new_state\":null}");
            CHECK(attr(s, "tftap.response.truncated") == NULL);
        } else {
            CHECK(rq == NULL);
            CHECK(attr(s, "tftap.response.json") == NULL);
            CHECK(attr(s, "tftap.request.truncated") == NULL);
        }
        tftap__otlp__export_trace_service_request__free_unpacked(r, NULL);
    }
    for (int i = 0; i < 4; i++)
        tftap_buf_done(&rv.bodies[i]);
    tftap_buf_done(&big);
}

static int log_lines;
static char first_line[512];
static void on_log(void *ctx, const char *line)
{
    (void)ctx;
    if (log_lines++ == 0)
        snprintf(first_line, sizeof first_line, "%s", line);
}

/* A loopback port nobody listens on: bound, never listened, then closed. */
static int dead_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t n = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &n) != 0)
        return -1;
    close(fd);
    return ntohs(a.sin_port);
}

static void test_dead_receiver(void)
{
    char url[64];
    int port = dead_port();
    CHECK(port > 0);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/traces", port);
    /* A long batch interval: the spans wait in the queue until close, so
     * which of them fit is certain. */
    otlp_config cfg = {
        .endpoint = url, .max_spans = 3, .batch_ms = 600000, .timeout_ms = 2000, .log = on_log};
    otlp_exporter *e = NULL;
    CHECK_INT_EQ(otlp_exporter_open(&cfg, &e), 0);
    otlp_span sp = {.method = "/tfplugin6.Provider/GetProviderSchema", .start_us = 1, .end_us = 2};
    for (int i = 0; i < 5; i++)
        otlp_exporter_add(e, &sp);
    otlp_stats st;
    otlp_exporter_get_stats(e, &st);
    CHECK_INT_EQ(st.added, 3);
    CHECK_INT_EQ(st.dropped, 2);
    otlp_exporter_close(e, 3000);
    /* Queue full, cannot export, the totals at close. */
    CHECK_INT_EQ(log_lines, 3);
    CHECK(strstr(first_line, "queue full") != NULL);

    /* The queue's byte bound: spans with values count their bytes. */
    log_lines = 0;
    otlp_config small = {.endpoint = url,
                         .values = 1,
                         .max_bytes = 6000,
                         .batch_ms = 600000,
                         .timeout_ms = 2000,
                         .log = on_log};
    CHECK_INT_EQ(otlp_exporter_open(&small, &e), 0);
    char val[3001];
    memset(val, 'x', 3000);
    val[3000] = '\0';
    otlp_span vs = {.method = "/tfplugin6.Provider/GetProviderSchema", .request_json = val};
    for (int i = 0; i < 3; i++)
        otlp_exporter_add(e, &vs);
    otlp_exporter_get_stats(e, &st);
    CHECK_INT_EQ(st.added, 1);
    CHECK_INT_EQ(st.dropped, 2);
    otlp_exporter_close(e, 3000);
    CHECK(strstr(first_line, "queue full (6000 bytes)") != NULL);

    otlp_config bad = {.endpoint = url, .traceparent = "00-zz"};
    CHECK_INT_EQ(otlp_exporter_open(&bad, &e), TFTAP_EINVAL);
    otlp_config none = {0};
    CHECK_INT_EQ(otlp_exporter_open(&none, &e), TFTAP_EINVAL);
    otlp_exporter_close(NULL, 0);
}

static void test_response(void)
{
    tftap_buf why = TFTAP_BUF_INIT;
    static const uint8_t partial[] = {0x0a, 0x07, 0x08, 0x03, 0x12, 0x03, 'b', 'a', 'd'};
    CHECK_INT_EQ(otlp_response_rejected(partial, sizeof partial, &why), 3);
    CHECK_STR_EQ(tftap_buf_cstr(&why), "bad");
    CHECK_INT_EQ(otlp_response_rejected("", 0, NULL), 0);
    CHECK_INT_EQ(otlp_response_rejected("\xff\xff\xff", 3, NULL), 0); /* malformed */
    tftap_buf_done(&why);
}

int main(void)
{
    test_response();
    test_traceparent();
    test_endpoint_env();
    test_encode();
    test_value_cut();
    test_diagnostics();
    test_resource_parse();
    test_encode_more();
    test_export_values();
    test_dead_receiver();
    return check_report("test_otlp");
}
