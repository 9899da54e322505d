/* otlp: trace context parsing, the encoded request read back with the
 * message definitions, and an exporter whose receiver is gone or whose
 * queue is full (drops counted and logged, nothing blocks). The real
 * receiver is tests/e2e/otlp.sh's. */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
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
    tftap__otlp__export_trace_service_request__free_unpacked(r, NULL);

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
    test_dead_receiver();
    return check_report("test_otlp");
}
