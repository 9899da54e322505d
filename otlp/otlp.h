/* otlp: each recorded provider call as an OpenTelemetry span, exported with
 * OTLP over HTTP/protobuf (protobuf-c for the bytes, libcurl for the POST)
 * from a thread of its own. Adding a span never blocks and never fails the
 * caller: the queue is bounded and what does not fit, or what the receiver
 * does not take, is dropped and counted. Layer: may use common only.
 *
 * Ownership: otlp_exporter_open() returns a handle released with
 * otlp_exporter_close(); span fields are copied by otlp_exporter_add(). */
#ifndef TFTAP_OTLP_H
#define TFTAP_OTLP_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

/* W3C trace context: "00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>".
 * Returns 0, or TFTAP_EDECODE for anything else (including all-zero ids and
 * version ff, which the specification forbids). */
int otlp_traceparent_parse(const char *s, uint8_t trace_id[16], uint8_t parent_id[8],
                           uint8_t *flags);

/* The traces endpoint the OTEL_* variables name (environ when envp is NULL):
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else OTEL_EXPORTER_OTLP_ENDPOINT
 * plus "/v1/traces". Returns a malloc'd URL or NULL when neither is set. */
char *otlp_endpoint_from_env(char *const *envp);

typedef struct otlp_config {
    const char *endpoint;    /* full URL of the traces endpoint (required) */
    const char *traceparent; /* NULL or a W3C traceparent: spans become its children */
    const char *trace_id;    /* NULL or 32 hex: the trace of spans without a traceparent */
    const char *service;     /* resource service.name (OTEL_SERVICE_NAME); NULL = the one
                                resource_attrs names, else "tftap" */
    /* NULL or OTEL_RESOURCE_ATTRIBUTES ("k=v,k2=v2", values percent-encoded):
     * more resource attributes; a malformed one is ignored whole (logged). */
    const char *resource_attrs;
    const char *headers; /* NULL or OTEL_EXPORTER_OTLP_HEADERS ("k=v,k2=v2") */
    int values;          /* 1: spans carry request/response values (--otlp-values) */
    /* 1: a failed span's status carries the provider's words (its gRPC
     * status message, its first error diagnostic's summary); 0: only that
     * it failed, and tftap.status.withheld. Words may quote a secret the
     * configuration marks, known only once the run has ended: spans made
     * from the record redacted then may carry them, spans that leave while
     * the run lasts may not. */
    int words;
    size_t max_spans;    /* queue bound; 0 = 4096 */
    size_t max_bytes;    /* and of the bytes queued spans hold; 0 = 32 MiB */
    unsigned batch_ms;   /* export at least this often while spans wait; 0 = 1000 */
    unsigned timeout_ms; /* one POST's bound; 0 = 10000 */
    /* Called from the exporter's thread with one lowercase line when
     * something is dropped or refused (at most once per kind of trouble,
     * plus the totals at close). */
    void (*log)(void *ctx, const char *line);
    void *log_ctx;
} otlp_config;

typedef struct otlp_span {
    const char *method;         /* gRPC path "/tfplugin6.Provider/PlanResourceChange" */
    const char *provider;       /* provider address; may be NULL */
    const char *version;        /* may be NULL */
    const char *type;           /* resource/data source type; may be NULL */
    const char *status_message; /* may be NULL */
    /* Error diagnostics a response with gRPC status OK carried (the call
     * failed as v_calls.failed says), and the first one's summary. */
    int error_count;
    const char *error_summary; /* may be NULL */
    /* The call's request and response as the record stores them, redacted
     * (only with cfg.values; NULL = none). otlp_exporter_add() keeps at
     * most OTLP_VALUE_MAX bytes of each and marks the cut. */
    const char *request_json, *response_json;
    int request_withheld, response_withheld;   /* 1: left out, could not be redacted */
    int request_truncated, response_truncated; /* set by otlp_exporter_add() */
    int64_t start_us, end_us;                  /* microseconds since the Unix epoch */
    int grpc_status;
    uint64_t request_bytes, response_bytes;
    uint64_t call_id;
    int64_t run_id;     /* 0 = unknown */
    uint8_t span_id[8]; /* all zero: otlp_exporter_add() picks a random one */
} otlp_span;

/* The most bytes of a value attribute (tftap.request.json, ...): backends
 * refuse or cut longer attributes anyway. */
#define OTLP_VALUE_MAX 16384

/* How many bytes of s (NUL-terminated) fit in max without cutting a UTF-8
 * character; strlen(s) when all of it does. */
size_t otlp_value_cut(const char *s, size_t max);

/* The error diagnostics in a call's response JSON (as the record stores
 * it: an object with "diagnostics": [{"severity": "ERROR", "summary": ...}]),
 * the first one's summary appended to first (NULL accepted). 0 for anything
 * else (a stream's array, malformed JSON). Counted as v_calls.error_count. */
int otlp_error_diagnostics(const char *json, size_t len, tftap_buf *first);

/* OTEL_RESOURCE_ATTRIBUTES: "key=value" pairs separated by commas, spaces
 * around each trimmed, values percent-decoded. Appends each pair to out as
 * "key\0value\0" and returns how many; TFTAP_EDECODE for a malformed list
 * (a pair without '=', an empty key, a bad %-escape, a NUL) and TFTAP_ELIMIT
 * past 64 pairs or 4096 bytes: the specification says to ignore it all. */
int otlp_resource_parse(const char *s, tftap_buf *out);

typedef struct otlp_exporter otlp_exporter;

/* Start the exporter's thread. TFTAP_EINVAL for a missing endpoint or a
 * malformed traceparent/trace_id, TFTAP_ENOMEM, TFTAP_EIO (no thread). */
int otlp_exporter_open(const otlp_config *cfg, otlp_exporter **out);

/* Queue one span; never blocks on the network (a full queue drops it). */
void otlp_exporter_add(otlp_exporter *e, const otlp_span *s);

typedef struct otlp_stats {
    uint64_t added;   /* accepted into the queue */
    uint64_t sent;    /* acknowledged by the receiver */
    uint64_t dropped; /* queue full, or the receiver refused or could not be reached */
    uint64_t posts_failed;
} otlp_stats;
void otlp_exporter_get_stats(otlp_exporter *e, otlp_stats *out);

/* Send what is queued, waiting at most flush_ms for it, then stop. What is
 * still unsent is dropped and counted (and logged). NULL accepted. */
void otlp_exporter_close(otlp_exporter *e, unsigned flush_ms);

/* The spans a receiver's 200 answer (an ExportTraceServiceResponse, up to
 * 64 KiB; untrusted) says it rejected, its message appended to why (NULL
 * accepted); 0 for anything else, malformed answers included. */
int64_t otlp_response_rejected(const void *body, size_t len, tftap_buf *why);

/* The ExportTraceServiceRequest for n spans (exposed for tests and the fuzz
 * of the response reader). Appends to out; 0 or TFTAP_ENOMEM. */
int otlp_encode(const otlp_config *cfg, const otlp_span *spans, size_t n, tftap_buf *out);

#endif
