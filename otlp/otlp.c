/* otlp: spans queued by the recorder, POSTed in batches by a thread of its
 * own, so a receiver that is slow or gone costs the record nothing. */
#include "config.h"

/* libcurl is opened when an exporter starts, not linked: every tftap
 * process (each shim) would otherwise load it and the two dozen libraries
 * it pulls in, spans or not. */
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "otlp/otlp.h"
#include "otlp_trace.pb-c.h"

#define OTLP_DEFAULT_MAX_SPANS 4096
/* Spans with values are up to 2 * OTLP_VALUE_MAX bytes each. */
#define OTLP_DEFAULT_MAX_BYTES ((size_t)32 << 20)
#define OTLP_DEFAULT_BATCH_MS 1000
#define OTLP_DEFAULT_TIMEOUT_MS 10000
/* One POST carries at most this many spans (the OTLP exporters' usual batch). */
#define OTLP_BATCH_MAX 512
/* A receiver answers with a small message; more than this is not read. */
#define OTLP_RESPONSE_MAX (64 * 1024)
/* Retries of a batch the receiver says to try again (429, 502, 503, 504). */
#define OTLP_RETRIES 2

/* ---- libcurl, loaded on first use ------------------------------------------ */

#define CURL_FUNCTIONS(X)                                                                          \
    X(global_init)                                                                                 \
    X(global_cleanup)                                                                              \
    X(easy_init)                                                                                   \
    X(easy_setopt)                                                                                 \
    X(easy_perform)                                                                                \
    X(easy_getinfo)                                                                                \
    X(easy_strerror)                                                                               \
    X(easy_cleanup)                                                                                \
    X(slist_append)                                                                                \
    X(slist_free_all)
/* Each pointer has its function's type as the header declares it. */
#define CURL_FIELD(f) __typeof__(curl_##f) *f;
static struct {
    CURL_FUNCTIONS(CURL_FIELD)
} cu;
#define CURL_SYM(f) {"curl_" #f, (void **)&cu.f},
static const struct tftap_dlsym cu_syms[] = {CURL_FUNCTIONS(CURL_SYM)};
/* The soname of libcurl4-openssl-dev's library. */
static tftap_lib cu_lib = {
    .soname = "libcurl.so.4", .syms = cu_syms, .nsyms = sizeof cu_syms / sizeof *cu_syms};

/* ---- trace context --------------------------------------------------------- */

static int hex_bytes(const char *s, size_t n, uint8_t *out)
{
    int nonzero = 0;
    for (size_t i = 0; i < n; i++) {
        int hi = tftap_hex_digit((unsigned char)s[2 * i]);
        int lo = tftap_hex_digit((unsigned char)s[2 * i + 1]);
        /* The specification's hex is lowercase only. */
        if (hi < 0 || lo < 0 || (s[2 * i] >= 'A' && s[2 * i] <= 'F') ||
            (s[2 * i + 1] >= 'A' && s[2 * i + 1] <= 'F'))
            return TFTAP_EDECODE;
        out[i] = (uint8_t)(hi << 4 | lo);
        nonzero |= out[i];
    }
    return nonzero ? 0 : TFTAP_EDECODE;
}

int otlp_traceparent_parse(const char *s, uint8_t trace_id[16], uint8_t parent_id[8],
                           uint8_t *flags)
{
    uint8_t ver, fl;
    if (s == NULL || strnlen(s, 56) < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-')
        return TFTAP_EDECODE;
    int vh = tftap_hex_digit((unsigned char)s[0]), vl = tftap_hex_digit((unsigned char)s[1]);
    int fh = tftap_hex_digit((unsigned char)s[53]), flo = tftap_hex_digit((unsigned char)s[54]);
    if (vh < 0 || vl < 0 || fh < 0 || flo < 0)
        return TFTAP_EDECODE;
    ver = (uint8_t)(vh << 4 | vl);
    fl = (uint8_t)(fh << 4 | flo);
    /* Version 00 is exactly 55 characters; a later one may append fields
     * after a dash. ff is invalid. */
    if (ver == 0xff || (ver == 0 && s[55] != '\0') || (s[55] != '\0' && s[55] != '-'))
        return TFTAP_EDECODE;
    if (hex_bytes(s + 3, 16, trace_id) != 0 || hex_bytes(s + 36, 8, parent_id) != 0)
        return TFTAP_EDECODE;
    if (flags)
        *flags = fl;
    return 0;
}

static const char *env_get(char *const *envp, const char *name)
{
    if (envp == NULL)
        return getenv(name);
    size_t n = strlen(name);
    for (; *envp; envp++)
        if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
            return *envp + n + 1;
    return NULL;
}

char *otlp_endpoint_from_env(char *const *envp)
{
    const char *t = env_get(envp, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    if (t != NULL && t[0] != '\0')
        return strdup(t);
    const char *b = env_get(envp, "OTEL_EXPORTER_OTLP_ENDPOINT");
    if (b == NULL || b[0] == '\0')
        return NULL;
    size_t n = strlen(b);
    while (n > 0 && b[n - 1] == '/')
        n--;
    char *url = malloc(n + sizeof "/v1/traces");
    if (url == NULL)
        return NULL;
    memcpy(url, b, n);
    memcpy(url + n, "/v1/traces", sizeof "/v1/traces");
    return url;
}

/* ---- what a span is made of ----------------------------------------------- */

size_t otlp_value_cut(const char *s, size_t max)
{
    size_t n = strnlen(s, max + 1);
    if (n <= max)
        return n;
    n = max;
    /* Back to the start of the character the cut falls in (at most 3
     * continuation bytes: more is not UTF-8, and is cut where it is). */
    for (int k = 0; k < 3 && n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80; k++)
        n--;
    return n;
}

int otlp_error_diagnostics(const char *json, size_t len, tftap_buf *first)
{
    /* Most responses name no severity: no parse for them (as v_calls). */
    static const char needle[] = "\"severity\"";
    if (json == NULL || len < sizeof needle - 1 ||
        memmem(json, len, needle, sizeof needle - 1) == NULL)
        return 0;
    sj_doc *doc = NULL;
    if (sj_parse(json, len, 0, &doc) != 0)
        return 0;
    int n = 0;
    const sj_node *root = sj_root(doc);
    const sj_node *d = root && root->kind == SJ_OBJECT ? sj_get(root, "diagnostics") : NULL;
    for (const sj_node *e = d && d->kind == SJ_ARRAY ? d->child : NULL; e; e = e->next) {
        const sj_node *sev = sj_get(e, "severity");
        if (sev == NULL || sev->kind != SJ_STRING || strcmp(sev->str, "ERROR") != 0 ||
            sev->len != 5)
            continue;
        if (n++ == 0 && first != NULL) {
            const sj_node *sum = sj_get(e, "summary");
            if (sum != NULL && sum->kind == SJ_STRING)
                tftap_buf_append(first, sum->str, otlp_value_cut(sum->str, 1024));
        }
    }
    sj_free(doc);
    return n;
}

#define OTLP_RESOURCE_MAX_PAIRS 64
#define OTLP_RESOURCE_MAX_BYTES 4096

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

int otlp_resource_parse(const char *s, tftap_buf *out)
{
    if (s == NULL)
        return 0;
    size_t total = strlen(s);
    if (total > OTLP_RESOURCE_MAX_BYTES)
        return TFTAP_ELIMIT;
    size_t mark = out->len;
    int n = 0;
    const char *p = s, *end = s + total;
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *q = comma ? comma : end;
        const char *a = p, *b = q;
        while (a < b && is_space(*a))
            a++;
        while (b > a && is_space(b[-1]))
            b--;
        p = comma ? comma + 1 : end;
        if (a == b)
            continue; /* "a=1,,b=2": nothing between */
        const char *eq = memchr(a, '=', (size_t)(b - a));
        const char *ke = eq;
        while (eq && ke > a && is_space(ke[-1]))
            ke--;
        if (eq == NULL || ke == a || n == OTLP_RESOURCE_MAX_PAIRS)
            goto bad;
        for (const char *k = a; k < ke; k++)
            if ((unsigned char)*k < 0x21 || *k == 0x7f)
                goto bad;
        tftap_buf_append(out, a, (size_t)(ke - a));
        tftap_buf_putc(out, '\0');
        const char *v = eq + 1;
        while (v < b && is_space(*v))
            v++;
        for (; v < b; v++) {
            unsigned char c = (unsigned char)*v;
            if (c == '%') {
                int hi = b - v >= 3 ? tftap_hex_digit((unsigned char)v[1]) : -1;
                int lo = b - v >= 3 ? tftap_hex_digit((unsigned char)v[2]) : -1;
                if (hi < 0 || lo < 0 || (hi | lo) == 0)
                    goto bad; /* a NUL would end the value early */
                c = (unsigned char)(hi << 4 | lo);
                v += 2;
            } else if (c < 0x20 || c == 0x7f) {
                goto bad;
            }
            tftap_buf_putc(out, (char)c);
        }
        tftap_buf_putc(out, '\0');
        n++;
    }
    if (tftap_buf_failed(out))
        return TFTAP_ENOMEM;
    return n;
bad:
    out->len = mark;
    if (out->data)
        out->data[mark] = '\0';
    return n == OTLP_RESOURCE_MAX_PAIRS ? TFTAP_ELIMIT : TFTAP_EDECODE;
}

/* ---- encoding -------------------------------------------------------------- */

/* The attributes of one span; strings borrowed from the span. */
#define SPAN_ATTRS_MAX 24
struct attrs {
    size_t n;
    Tftap__Otlp__KeyValue kv[SPAN_ATTRS_MAX];
    Tftap__Otlp__AnyValue v[SPAN_ATTRS_MAX];
    Tftap__Otlp__KeyValue *p[SPAN_ATTRS_MAX];
};

/* The next attribute named key, its value still to set; NULL when full. */
static Tftap__Otlp__AnyValue *attr_add(struct attrs *a, const char *key)
{
    if (a->n == SPAN_ATTRS_MAX)
        return NULL;
    size_t i = a->n++;
    tftap__otlp__key_value__init(&a->kv[i]);
    tftap__otlp__any_value__init(&a->v[i]);
    a->kv[i].key = (char *)key;
    a->kv[i].value = &a->v[i];
    a->p[i] = &a->kv[i];
    return &a->v[i];
}

static void attr_str(struct attrs *a, const char *key, const char *val)
{
    Tftap__Otlp__AnyValue *v = val ? attr_add(a, key) : NULL;
    if (v) {
        v->value_case = TFTAP__OTLP__ANY_VALUE__VALUE_STRING_VALUE;
        v->string_value = (char *)val;
    }
}

static void attr_bool(struct attrs *a, const char *key, int val)
{
    Tftap__Otlp__AnyValue *v = attr_add(a, key);
    if (v) {
        v->value_case = TFTAP__OTLP__ANY_VALUE__VALUE_BOOL_VALUE;
        v->bool_value = val != 0;
    }
}

static void attr_int(struct attrs *a, const char *key, int64_t val)
{
    Tftap__Otlp__AnyValue *v = attr_add(a, key);
    if (v) {
        v->value_case = TFTAP__OTLP__ANY_VALUE__VALUE_INT_VALUE;
        v->int_value = val;
    }
}

struct ctx_ids {
    uint8_t trace[16];
    uint8_t parent[8];
    int has_trace, has_parent;
    uint8_t flags;
};

static int ctx_ids_from(const otlp_config *cfg, struct ctx_ids *ids)
{
    memset(ids, 0, sizeof *ids);
    if (cfg->traceparent != NULL && cfg->traceparent[0] != '\0') {
        if (otlp_traceparent_parse(cfg->traceparent, ids->trace, ids->parent, &ids->flags) != 0)
            return TFTAP_EINVAL;
        ids->has_trace = ids->has_parent = 1;
    } else if (cfg->trace_id != NULL && cfg->trace_id[0] != '\0') {
        if (strlen(cfg->trace_id) != 32 || hex_bytes(cfg->trace_id, 16, ids->trace) != 0)
            return TFTAP_EINVAL;
        ids->has_trace = 1;
        ids->flags = 1;
    }
    return 0;
}

/* "/tfplugin6.Provider/PlanResourceChange" -> service and method, borrowed
 * into caller storage (the service without its leading slash). */
static void split_method(const char *path, char *service, size_t cap, const char **method)
{
    const char *p = path ? path : "";
    if (*p == '/')
        p++;
    const char *slash = strrchr(p, '/');
    if (slash == NULL) {
        snprintf(service, cap, "%s", "");
        *method = p;
        return;
    }
    snprintf(service, cap, "%.*s", (int)(slash - p), p);
    *method = slash + 1;
}

static int encode_ids(const otlp_config *cfg, const struct ctx_ids *ids, const otlp_span *spans,
                      size_t n, tftap_buf *out)
{
    Tftap__Otlp__Span *sp = calloc(n ? n : 1, sizeof *sp);
    Tftap__Otlp__Span **spp = calloc(n ? n : 1, sizeof *spp);
    Tftap__Otlp__Status *st = calloc(n ? n : 1, sizeof *st);
    struct attrs *at = calloc(n ? n : 1, sizeof *at);
    char(*svc)[128] = calloc(n ? n : 1, sizeof *svc);
    uint8_t(*trace)[16] = calloc(n ? n : 1, sizeof *trace);
    int rc = 0;
    if (!sp || !spp || !st || !at || !svc || !trace) {
        rc = TFTAP_ENOMEM;
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        const otlp_span *s = &spans[i];
        Tftap__Otlp__Span *o = &sp[i];
        tftap__otlp__span__init(o);
        if (ids->has_trace)
            memcpy(trace[i], ids->trace, 16);
        else /* no context at all: the span's own id, repeated, keeps it a trace of its own */
            for (int k = 0; k < 16; k++)
                trace[i][k] = s->span_id[k % 8] ^ (uint8_t)(k < 8 ? 0 : 0x5a);
        o->trace_id = (ProtobufCBinaryData){16, trace[i]};
        o->span_id = (ProtobufCBinaryData){8, (uint8_t *)s->span_id};
        if (ids->has_parent)
            o->parent_span_id = (ProtobufCBinaryData){8, (uint8_t *)ids->parent};
        const char *method;
        split_method(s->method, svc[i], sizeof svc[i], &method);
        o->name = (char *)(method[0] ? method : "unknown");
        o->kind = TFTAP__OTLP__SPAN__SPAN_KIND__SPAN_KIND_CLIENT;
        o->start_time_unix_nano = (uint64_t)(s->start_us > 0 ? s->start_us : 0) * 1000u;
        o->end_time_unix_nano = (uint64_t)(s->end_us > s->start_us ? s->end_us
                                           : s->start_us > 0       ? s->start_us
                                                                   : 0) *
                                1000u;
        o->flags = 0x100u | (ids->flags & 0xffu); /* bit 8: the parent's remoteness is known */
        if (ids->has_parent)
            o->flags |= 0x200u; /* and it is remote */
        struct attrs *a = &at[i];
        attr_str(a, "rpc.system", "grpc");
        attr_str(a, "rpc.service", svc[i][0] ? svc[i] : NULL);
        attr_str(a, "rpc.method", method);
        attr_int(a, "rpc.grpc.status_code", s->grpc_status);
        attr_str(a, "tftap.provider", s->provider);
        attr_str(a, "tftap.provider.version", s->version);
        attr_str(a, "tftap.type", s->type);
        attr_int(a, "tftap.request.bytes", (int64_t)s->request_bytes);
        attr_int(a, "tftap.response.bytes", (int64_t)s->response_bytes);
        attr_int(a, "tftap.call_seq", (int64_t)s->call_id);
        if (s->run_id > 0)
            attr_int(a, "tftap.run_id", s->run_id);
        /* go-plugin's housekeeping ending as the provider exits, or
         * UNIMPLEMENTED from a method a provider may lack: an expected
         * close (v_calls.expected_close), not an error. */
        int expected = tftap_call_expected_close(s->method, s->grpc_status);
        if (expected == TFTAP_CLOSE_TEARDOWN)
            attr_bool(a, "tftap.teardown", 1);
        if (expected)
            attr_bool(a, "tftap.expected_close", 1);
        if (s->error_count > 0)
            attr_int(a, "tftap.diagnostics.errors", s->error_count);
        /* The status's message, when the words may leave (cfg->words). */
        const char *words = NULL;
        int failed = !expected && (s->grpc_status != 0 || s->error_count > 0);
        if (failed)
            words = s->grpc_status != 0 ? s->status_message : s->error_summary;
        if (words && !cfg->words) {
            attr_bool(a, "tftap.status.withheld", 1);
            words = NULL;
        }
        attr_str(a, "tftap.request.json", s->request_json);
        if (s->request_json && s->request_truncated)
            attr_bool(a, "tftap.request.truncated", 1);
        if (s->request_withheld)
            attr_bool(a, "tftap.request.withheld", 1);
        attr_str(a, "tftap.response.json", s->response_json);
        if (s->response_json && s->response_truncated)
            attr_bool(a, "tftap.response.truncated", 1);
        if (s->response_withheld)
            attr_bool(a, "tftap.response.withheld", 1);
        o->n_attributes = a->n;
        o->attributes = a->p;
        tftap__otlp__status__init(&st[i]);
        /* Failed as v_calls.failed says: a gRPC error, or error diagnostics
         * in an OK answer; an expected close is neither. */
        if (failed) {
            st[i].code = TFTAP__OTLP__STATUS__STATUS_CODE__STATUS_CODE_ERROR;
            if (words)
                st[i].message = (char *)words;
        }
        o->status = &st[i];
        spp[i] = o;
    }

    Tftap__Otlp__InstrumentationScope scope = TFTAP__OTLP__INSTRUMENTATION_SCOPE__INIT;
    scope.name = "tftap";
    scope.version = PACKAGE_VERSION;
    Tftap__Otlp__ScopeSpans ss = TFTAP__OTLP__SCOPE_SPANS__INIT;
    ss.scope = &scope;
    ss.n_spans = n;
    ss.spans = spp;
    Tftap__Otlp__ScopeSpans *ssp = &ss;
    /* The resource: OTEL_RESOURCE_ATTRIBUTES, with service.name from
     * OTEL_SERVICE_NAME over it, and ours where it says nothing. */
    tftap_buf rattr = TFTAP_BUF_INIT;
    int nr = otlp_resource_parse(cfg->resource_attrs, &rattr);
    if (nr < 0)
        nr = 0; /* malformed: ignored whole (the exporter logged it) */
    const char *service = cfg->service, *version = NULL;
    size_t nkv = (size_t)nr + 2, nra = 0;
    Tftap__Otlp__KeyValue *rkv = calloc(nkv, sizeof *rkv);
    Tftap__Otlp__AnyValue *rv = calloc(nkv, sizeof *rv);
    Tftap__Otlp__KeyValue **rp = calloc(nkv, sizeof *rp);
    if (!rkv || !rv || !rp) {
        rc = TFTAP_ENOMEM;
        goto res_done;
    }
    for (const char *k = rattr.data; k != NULL && nr-- > 0;) {
        const char *v = k + strlen(k) + 1;
        const char *next = v + strlen(v) + 1;
        if (strcmp(k, "service.name") == 0 && service == NULL)
            service = v;
        else if (strcmp(k, "service.version") == 0)
            version = v;
        else if (strcmp(k, "service.name") != 0) {
            tftap__otlp__key_value__init(&rkv[nra]);
            tftap__otlp__any_value__init(&rv[nra]);
            rkv[nra].key = (char *)k;
            rv[nra].value_case = TFTAP__OTLP__ANY_VALUE__VALUE_STRING_VALUE;
            rv[nra].string_value = (char *)v;
            rkv[nra].value = &rv[nra];
            rp[nra] = &rkv[nra];
            nra++;
        }
        k = next;
    }
    const char *fixed[2][2] = {{"service.name", service ? service : "tftap"},
                               {"service.version", version ? version : PACKAGE_VERSION}};
    for (int f = 0; f < 2; f++) {
        tftap__otlp__key_value__init(&rkv[nra]);
        tftap__otlp__any_value__init(&rv[nra]);
        rkv[nra].key = (char *)fixed[f][0];
        rv[nra].value_case = TFTAP__OTLP__ANY_VALUE__VALUE_STRING_VALUE;
        rv[nra].string_value = (char *)fixed[f][1];
        rkv[nra].value = &rv[nra];
        rp[nra] = &rkv[nra];
        nra++;
    }
    Tftap__Otlp__Resource res = TFTAP__OTLP__RESOURCE__INIT;
    res.n_attributes = nra;
    res.attributes = rp;
    Tftap__Otlp__ResourceSpans rs = TFTAP__OTLP__RESOURCE_SPANS__INIT;
    rs.resource = &res;
    rs.n_scope_spans = 1;
    rs.scope_spans = &ssp;
    Tftap__Otlp__ResourceSpans *rsp = &rs;
    Tftap__Otlp__ExportTraceServiceRequest req = TFTAP__OTLP__EXPORT_TRACE_SERVICE_REQUEST__INIT;
    req.n_resource_spans = 1;
    req.resource_spans = &rsp;

    size_t len = tftap__otlp__export_trace_service_request__get_packed_size(&req);
    if (tftap_buf_reserve(out, len) != 0) {
        rc = TFTAP_ENOMEM;
        goto res_done;
    }
    tftap__otlp__export_trace_service_request__pack(&req, (uint8_t *)out->data + out->len);
    out->len += len;
res_done:
    free(rkv);
    free(rv);
    free(rp);
    tftap_buf_done(&rattr);
done:
    free(sp);
    free(spp);
    free(st);
    free(at);
    free(svc);
    free(trace);
    return rc;
}

int otlp_encode(const otlp_config *cfg, const otlp_span *spans, size_t n, tftap_buf *out)
{
    struct ctx_ids ids;
    if (ctx_ids_from(cfg, &ids) != 0)
        return TFTAP_EINVAL;
    return encode_ids(cfg, &ids, spans, n, out);
}

/* ---- the exporter ------------------------------------------------------------ */

/* A queued span: the struct plus its strings, in one allocation. */
struct node {
    struct node *next;
    size_t size; /* counted against cfg.max_bytes */
    otlp_span s;
    char text[];
};

struct otlp_exporter {
    otlp_config cfg; /* strings below are owned copies */
    char *endpoint, *traceparent, *trace_id, *service, *headers, *resource_attrs;
    char *endpoint_shown; /* for the log: without user:password@ */
    struct ctx_ids ids;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct node *head, **tail;
    size_t queued, queued_bytes;
    int stopping;
    int64_t flush_deadline_us; /* while stopping: give up after this */
    otlp_stats st;
    int logged_full, logged_post;
    CURL *curl;
    struct curl_slist *hdrs;
};

static void xlog(otlp_exporter *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void xlog(otlp_exporter *e, const char *fmt, ...)
{
    if (e->cfg.log == NULL)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    e->cfg.log(e->cfg.log_ctx, line);
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static size_t sink_body(char *p, size_t size, size_t n, void *ud)
{
    tftap_buf *b = ud;
    size_t len = size * n;
    if (b->len + len > OTLP_RESPONSE_MAX)
        return len; /* the rest is not needed */
    tftap_buf_append(b, p, len);
    return len;
}

int64_t otlp_response_rejected(const void *body, size_t len, tftap_buf *why)
{
    if (body == NULL || len == 0 || len > OTLP_RESPONSE_MAX)
        return 0;
    Tftap__Otlp__ExportTraceServiceResponse *r =
        tftap__otlp__export_trace_service_response__unpack(NULL, len, (const uint8_t *)body);
    if (r == NULL)
        return 0; /* not ours to judge: the receiver said 200 */
    int64_t n = 0;
    if (r->partial_success) {
        n = r->partial_success->rejected_spans;
        if (r->partial_success->error_message && why != NULL)
            tftap_buf_printf(why, "%.200s", r->partial_success->error_message);
    }
    tftap__otlp__export_trace_service_response__free_unpacked(r, NULL);
    return n < 0 ? 0 : n;
}

/* POST one batch; returns how many of its n spans the receiver took. */
static size_t post_batch(otlp_exporter *e, const otlp_span *spans, size_t n)
{
    tftap_buf req = TFTAP_BUF_INIT, body = TFTAP_BUF_INIT, why = TFTAP_BUF_INIT;
    size_t took = 0;
    if (encode_ids(&e->cfg, &e->ids, spans, n, &req) != 0) {
        xlog(e, "otlp: out of memory encoding %zu spans; dropped", n);
        goto done;
    }
    for (int attempt = 0; attempt <= OTLP_RETRIES; attempt++) {
        tftap_buf_reset(&body);
        /* While closing, no POST outlives the flush deadline. */
        long tmo = (long)e->cfg.timeout_ms;
        pthread_mutex_lock(&e->mu);
        if (e->stopping) {
            int64_t left = (e->flush_deadline_us - tftap_now_us()) / 1000;
            if (left < tmo)
                tmo = left > 1 ? (long)left : 1;
        }
        pthread_mutex_unlock(&e->mu);
        cu.easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, tmo);
        cu.easy_setopt(e->curl, CURLOPT_POSTFIELDS, req.data);
        cu.easy_setopt(e->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req.len);
        cu.easy_setopt(e->curl, CURLOPT_WRITEDATA, &body);
        CURLcode cc = cu.easy_perform(e->curl);
        long code = 0;
        if (cc == CURLE_OK)
            cu.easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &code);
        if (cc == CURLE_OK && code >= 200 && code < 300) {
            int64_t rej = otlp_response_rejected(body.data, body.len, &why);
            if (rej > 0) {
                xlog(e, "otlp: %s rejected %lld of %zu spans: %s", e->endpoint_shown,
                     (long long)rej, n, tftap_buf_cstr(&why));
                took = (size_t)rej >= n ? 0 : n - (size_t)rej;
            } else {
                took = n;
            }
            break;
        }
        int retry = cc == CURLE_OK && (code == 429 || code == 502 || code == 503 || code == 504);
        int stopping;
        pthread_mutex_lock(&e->mu);
        stopping = e->stopping && tftap_now_us() >= e->flush_deadline_us;
        pthread_mutex_unlock(&e->mu);
        if (!retry || attempt == OTLP_RETRIES || stopping) {
            e->st.posts_failed++;
            if (!e->logged_post) {
                e->logged_post = 1;
                if (cc != CURLE_OK)
                    xlog(e, "otlp: cannot export to %s: %s; spans are dropped (counted)",
                         e->endpoint_shown, cu.easy_strerror(cc));
                else
                    xlog(e, "otlp: %s answered HTTP %ld; spans are dropped (counted)",
                         e->endpoint_shown, code);
            }
            break;
        }
        /* Back off before the retry, a little longer each time. */
        struct timespec ts = {0, 200000000L * (attempt + 1)};
        nanosleep(&ts, NULL);
    }
done:
    tftap_buf_done(&req);
    tftap_buf_done(&body);
    tftap_buf_done(&why);
    return took;
}

static void *exporter_main(void *arg)
{
    otlp_exporter *e = arg;
    otlp_span *batch = malloc(OTLP_BATCH_MAX * sizeof *batch);
    struct node **nodes = malloc(OTLP_BATCH_MAX * sizeof *nodes);
    pthread_mutex_lock(&e->mu);
    for (;;) {
        if (e->queued < OTLP_BATCH_MAX && !e->stopping) {
            /* Wait for a full batch or the batch interval, whichever first. */
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += e->cfg.batch_ms / 1000;
            until.tv_nsec += (long)(e->cfg.batch_ms % 1000) * 1000000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            while (e->queued < OTLP_BATCH_MAX && !e->stopping)
                if (pthread_cond_timedwait(&e->cv, &e->mu, &until) == ETIMEDOUT)
                    break;
        }
        if (e->queued == 0) {
            if (e->stopping)
                break;
            continue;
        }
        size_t n = 0;
        while (n < OTLP_BATCH_MAX && e->head) {
            struct node *nd = e->head;
            e->head = nd->next;
            nodes[n++] = nd;
            e->queued_bytes -= nd->size;
        }
        if (e->head == NULL)
            e->tail = &e->head;
        e->queued -= n;
        int give_up = e->stopping && tftap_now_us() >= e->flush_deadline_us;
        pthread_mutex_unlock(&e->mu);
        size_t took = 0;
        if (batch == NULL || nodes == NULL || give_up || e->curl == NULL) {
            took = 0;
        } else {
            for (size_t i = 0; i < n; i++)
                batch[i] = nodes[i]->s;
            took = post_batch(e, batch, n);
        }
        for (size_t i = 0; i < n; i++)
            free(nodes[i]);
        pthread_mutex_lock(&e->mu);
        e->st.sent += took;
        e->st.dropped += n - took;
    }
    pthread_mutex_unlock(&e->mu);
    free(batch);
    free(nodes);
    return NULL;
}

/* url without the user:password@ a URL may carry, for the log. */
static char *shown_url(const char *url)
{
    if (!url)
        return NULL;
    const char *auth = strstr(url, "://");
    auth = auth ? auth + 3 : url;
    size_t alen = strcspn(auth, "/?#");
    const char *at = memchr(auth, '@', alen);
    tftap_buf b = TFTAP_BUF_INIT;
    if (at) {
        tftap_buf_append(&b, url, (size_t)(auth - url));
        tftap_buf_puts(&b, "***@");
        tftap_buf_puts(&b, at + 1);
    } else {
        tftap_buf_puts(&b, url);
    }
    tftap_buf_cstr(&b);
    if (tftap_buf_failed(&b)) {
        tftap_buf_done(&b);
        return NULL;
    }
    return tftap_buf_take(&b, NULL);
}

int otlp_exporter_open(const otlp_config *cfg, otlp_exporter **out)
{
    *out = NULL;
    if (cfg == NULL || cfg->endpoint == NULL || cfg->endpoint[0] == '\0')
        return TFTAP_EINVAL;
    otlp_exporter *e = calloc(1, sizeof *e);
    if (e == NULL)
        return TFTAP_ENOMEM;
    e->cfg = *cfg;
    e->endpoint = dup_or_null(cfg->endpoint);
    e->endpoint_shown = shown_url(cfg->endpoint);
    e->traceparent = dup_or_null(cfg->traceparent);
    e->trace_id = dup_or_null(cfg->trace_id);
    e->service = dup_or_null(cfg->service);
    e->headers = dup_or_null(cfg->headers);
    e->resource_attrs = dup_or_null(cfg->resource_attrs);
    e->cfg.resource_attrs = e->resource_attrs;
    e->cfg.endpoint = e->endpoint;
    e->cfg.traceparent = e->traceparent;
    e->cfg.trace_id = e->trace_id;
    e->cfg.service = e->service;
    e->cfg.headers = e->headers;
    if (e->cfg.max_spans == 0)
        e->cfg.max_spans = OTLP_DEFAULT_MAX_SPANS;
    if (e->cfg.max_bytes == 0)
        e->cfg.max_bytes = OTLP_DEFAULT_MAX_BYTES;
    if (e->cfg.batch_ms == 0)
        e->cfg.batch_ms = OTLP_DEFAULT_BATCH_MS;
    if (e->cfg.timeout_ms == 0)
        e->cfg.timeout_ms = OTLP_DEFAULT_TIMEOUT_MS;
    e->tail = &e->head;
    int rc = ctx_ids_from(&e->cfg, &e->ids);
    if (rc == 0 && (!e->endpoint || !e->endpoint_shown || (cfg->traceparent && !e->traceparent) ||
                    (cfg->trace_id && !e->trace_id) || (cfg->service && !e->service) ||
                    (cfg->headers && !e->headers) || (cfg->resource_attrs && !e->resource_attrs)))
        rc = TFTAP_ENOMEM;
    if (rc == 0 && e->resource_attrs != NULL) {
        tftap_buf tmp = TFTAP_BUF_INIT;
        if (otlp_resource_parse(e->resource_attrs, &tmp) < 0) {
            if (cfg->log)
                cfg->log(cfg->log_ctx, "otlp: OTEL_RESOURCE_ATTRIBUTES is malformed (key=value "
                                       "pairs, comma separated, values %-encoded); ignored");
            free(e->resource_attrs);
            e->resource_attrs = NULL;
            e->cfg.resource_attrs = NULL;
        }
        tftap_buf_done(&tmp);
    }
    if (rc == 0 && tftap_lib_load(&cu_lib) != 0) {
        if (cfg->log) {
            cfg->log(cfg->log_ctx,
                     "otlp: cannot load libcurl.so.4 (Debian: libcurl4); no spans are exported");
        }
        rc = TFTAP_EIO;
    }
    if (rc == 0) {
        /* Once per process; the recorder process calls this before any other
         * thread of its own exists. */
        if (cu.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || !(e->curl = cu.easy_init()))
            rc = TFTAP_ENOMEM;
    }
    if (rc == 0) {
        struct curl_slist *h = cu.slist_append(NULL, "Content-Type: application/x-protobuf");
        /* OTEL_EXPORTER_OTLP_HEADERS: k=v pairs, comma separated. */
        if (h && e->headers) {
            char *copy = strdup(e->headers), *save = NULL;
            for (char *kv = copy ? strtok_r(copy, ",", &save) : NULL; kv && h;
                 kv = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(kv, '=');
                if (eq == NULL || eq == kv)
                    continue;
                tftap_buf line = TFTAP_BUF_INIT;
                tftap_buf_printf(&line, "%.*s: %s", (int)(eq - kv), kv, eq + 1);
                struct curl_slist *nh = cu.slist_append(h, tftap_buf_cstr(&line));
                tftap_buf_done(&line);
                if (nh == NULL) {
                    cu.slist_free_all(h);
                    h = NULL;
                } else {
                    h = nh;
                }
            }
            free(copy);
        }
        e->hdrs = h;
        if (h == NULL)
            rc = TFTAP_ENOMEM;
    }
    if (rc == 0) {
        cu.easy_setopt(e->curl, CURLOPT_URL, e->endpoint);
        cu.easy_setopt(e->curl, CURLOPT_HTTPHEADER, e->hdrs);
        cu.easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, (long)e->cfg.timeout_ms);
        cu.easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS,
                       (long)(e->cfg.timeout_ms < 3000 ? e->cfg.timeout_ms : 3000));
        cu.easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
        cu.easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, sink_body);
        cu.easy_setopt(e->curl, CURLOPT_PROTOCOLS_STR, "http,https");
        cu.easy_setopt(e->curl, CURLOPT_USERAGENT, "tftap/" PACKAGE_VERSION);
        pthread_mutex_init(&e->mu, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_cond_init(&e->cv, &ca);
        pthread_condattr_destroy(&ca);
        if (pthread_create(&e->thread, NULL, exporter_main, e) != 0) {
            pthread_mutex_destroy(&e->mu);
            pthread_cond_destroy(&e->cv);
            rc = TFTAP_EIO;
        }
    }
    if (rc != 0) {
        if (e->hdrs)
            cu.slist_free_all(e->hdrs);
        if (e->curl)
            cu.easy_cleanup(e->curl);
        free(e->endpoint);
        free(e->endpoint_shown);
        free(e->traceparent);
        free(e->trace_id);
        free(e->service);
        free(e->headers);
        free(e->resource_attrs);
        free(e);
        return rc;
    }
    *out = e;
    return 0;
}

static size_t slen(const char *s)
{
    return s ? strlen(s) + 1 : 0;
}

static const char *put(char **at, const char *s)
{
    if (s == NULL)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = *at;
    memcpy(d, s, n);
    *at += n;
    return d;
}

/* A value's copy, cut to OTLP_VALUE_MAX bytes (marked). */
static const char *put_value(char **at, const char *s, int *truncated)
{
    if (s == NULL)
        return NULL;
    size_t n = otlp_value_cut(s, OTLP_VALUE_MAX);
    *truncated = s[n] != '\0';
    char *d = *at;
    memcpy(d, s, n);
    d[n] = '\0';
    *at += n + 1;
    return d;
}

static void count_drop(otlp_exporter *e, const char *why, size_t bound)
{
    pthread_mutex_lock(&e->mu);
    e->st.dropped++;
    int first = !e->logged_full;
    e->logged_full = 1;
    pthread_mutex_unlock(&e->mu);
    if (first && why != NULL)
        xlog(e, "otlp: span queue full (%zu %s); spans are dropped (counted)", bound, why);
}

void otlp_exporter_add(otlp_exporter *e, const otlp_span *s)
{
    if (e == NULL || s == NULL)
        return;
    pthread_mutex_lock(&e->mu);
    int full = e->queued >= e->cfg.max_spans || e->stopping;
    pthread_mutex_unlock(&e->mu);
    if (full) {
        count_drop(e, "spans", e->cfg.max_spans);
        return;
    }
    /* Values only when asked for: a span never carries more than the
     * configuration allows, whoever filled it in. */
    const char *req = e->cfg.values ? s->request_json : NULL;
    const char *resp = e->cfg.values ? s->response_json : NULL;
    size_t text = slen(s->method) + slen(s->provider) + slen(s->version) + slen(s->type) +
                  slen(s->status_message) + slen(s->error_summary) +
                  (req ? otlp_value_cut(req, OTLP_VALUE_MAX) + 1 : 0) +
                  (resp ? otlp_value_cut(resp, OTLP_VALUE_MAX) + 1 : 0);
    struct node *nd = malloc(sizeof *nd + text);
    if (nd == NULL) {
        count_drop(e, NULL, 0);
        return;
    }
    nd->next = NULL;
    nd->size = sizeof *nd + text;
    nd->s = *s;
    char *at = nd->text;
    nd->s.method = put(&at, s->method);
    nd->s.provider = put(&at, s->provider);
    nd->s.version = put(&at, s->version);
    nd->s.type = put(&at, s->type);
    nd->s.status_message = put(&at, s->status_message);
    nd->s.error_summary = put(&at, s->error_summary);
    nd->s.request_truncated = nd->s.response_truncated = 0;
    nd->s.request_json = put_value(&at, req, &nd->s.request_truncated);
    nd->s.response_json = put_value(&at, resp, &nd->s.response_truncated);
    if (!e->cfg.values)
        nd->s.request_withheld = nd->s.response_withheld = 0;
    static const uint8_t zero[8];
    if (memcmp(nd->s.span_id, zero, 8) == 0) {
        /* getrandom never fails for 8 bytes once the pool is ready; a
         * clock-derived id keeps a span that meets an old kernel. */
        if (getrandom(nd->s.span_id, 8, 0) != 8) {
            uint64_t t = (uint64_t)tftap_now_us() ^ (s->call_id << 40);
            memcpy(nd->s.span_id, &t, 8);
        }
        if (memcmp(nd->s.span_id, zero, 8) == 0)
            nd->s.span_id[7] = 1;
    }
    pthread_mutex_lock(&e->mu);
    if (e->queued_bytes + nd->size > e->cfg.max_bytes || e->stopping) {
        pthread_mutex_unlock(&e->mu);
        free(nd);
        count_drop(e, "bytes", e->cfg.max_bytes);
        return;
    }
    *e->tail = nd;
    e->tail = &nd->next;
    e->queued++;
    e->queued_bytes += nd->size;
    e->st.added++;
    if (e->queued >= OTLP_BATCH_MAX)
        pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

void otlp_exporter_get_stats(otlp_exporter *e, otlp_stats *out)
{
    memset(out, 0, sizeof *out);
    if (e == NULL)
        return;
    pthread_mutex_lock(&e->mu);
    *out = e->st;
    pthread_mutex_unlock(&e->mu);
}

void otlp_exporter_close(otlp_exporter *e, unsigned flush_ms)
{
    if (e == NULL)
        return;
    pthread_mutex_lock(&e->mu);
    e->stopping = 1;
    e->flush_deadline_us = tftap_now_us() + (int64_t)flush_ms * 1000;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    /* A POST under way may still take up to its own timeout; bounded. */
    pthread_join(e->thread, NULL);
    if (e->st.dropped > 0)
        xlog(e, "otlp: %llu of %llu spans were not exported to %s",
             (unsigned long long)e->st.dropped, (unsigned long long)(e->st.added),
             e->endpoint_shown);
    cu.slist_free_all(e->hdrs);
    cu.easy_cleanup(e->curl);
    cu.global_cleanup();
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    free(e->endpoint);
    free(e->endpoint_shown);
    free(e->traceparent);
    free(e->trace_id);
    free(e->service);
    free(e->headers);
    free(e->resource_attrs);
    free(e);
}
