/* recorder: the decoding stage (recorder.c has the whole picture). It runs
 * in the thread of the caller that tells an event (the recorder process's
 * pipe reader), one caller at a time: it keeps each live call's state in
 * memory, decodes its messages against the schema, redacts them, and hands
 * "ops" (call row images, schema rows, gap counts, ...) to the SQL thread
 * (sql.c), which also hands over what a caller that went quiet left. It also learns the provider
 * process's details and its binary's digest, and borrows a schema another recorder of the run
 * wrote. */
#include "recorder/recorder_int.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- writer: calls in memory -------------------------------------------- */

static struct call **bucket(recorder *r, uint64_t id)
{
    return &r->buckets[(id * 0x9E3779B97F4A7C15ull) >> 54 & (CALL_BUCKETS - 1)];
}

static struct call *call_find(recorder *r, uint64_t id)
{
    for (struct call *c = *bucket(r, id); c; c = c->hnext)
        if (c->call_id == id)
            return c;
    return NULL;
}

static int method_is_stream(const char *m)
{
    static const char *const streams[] = {
        "ListResource",      "InvokeAction", "ReadStateBytes", "WriteStateBytes",
        "ProvisionResource", "StartStream",  "StreamStdio",
    };
    const char *rpc = store_rpc_name(m);
    for (size_t i = 0; i < sizeof streams / sizeof streams[0]; i++)
        if (strcmp(rpc, streams[i]) == 0)
            return 1;
    return 0;
}

/* A call whose row image is owed; counted, so that the decoder knows what
 * emitting the images will add to the bound (an op each) before it does. */
static void mark_dirty(recorder *r, struct call *c)
{
    if (!c->dirty) {
        r->dirty_calls++;
        /* Its image copies what was rendered before too. */
        r->dirty_bytes += c->req.json.len - c->req.big + c->resp.json.len - c->resp.big;
    }
    c->dirty = 1;
}

static struct call *call_get(recorder *r, uint64_t id, const char *method, int64_t t_us)
{
    struct call *c = call_find(r, id);
    if (c)
        return c;
    c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->call_id = id;
    /* A call whose begin was dropped still gets a row, method unknown. */
    c->method = rec_dupstr(method ? method : "");
    if (!c->method) {
        free(c);
        return NULL;
    }
    c->stream = method_is_stream(c->method);
    c->started_us = t_us;
    c->raws_tail = &c->raws;
    mark_dirty(r, c);
    struct call **b = bucket(r, id);
    c->hnext = *b;
    *b = c;
    c->lnext = NULL;
    *r->calls_tail = c;
    r->calls_tail = &c->lnext;
    return c;
}

/* ---- writer: decoding ----------------------------------------------------- */

/* A keyed context made once: fetching the algorithm and hashing the key
 * for every value (as the one-shot HMAC() does) costs more than the digest
 * itself. */
static void mac_setup(recorder *r)
{
    tftap_hmac_free(r->mac);
    r->mac = tftap_hmac_new(r->key, sizeof r->key);
}

static void redact_hmac(void *ctx, const char *json, size_t len, char out[65])
{
    recorder *r = ctx;
    if (r->decoding)
        rec_quoted_note(r->decoding, json, len);
    if (!r->mac || tftap_hmac_hex(r->mac, json, len, out) != 0)
        tftap_hmac_sha256_hex(r->key, sizeof r->key, json, len, out);
}

static int is_provider_schema_method(const char *m)
{
    return strcmp(m, "/tfplugin5.Provider/GetSchema") == 0 ||
           strcmp(m, "/tfplugin6.Provider/GetProviderSchema") == 0;
}

static int is_identity_schema_method(const char *m)
{
    return strcmp(m, "/tfplugin5.Provider/GetResourceIdentitySchemas") == 0 ||
           strcmp(m, "/tfplugin6.Provider/GetResourceIdentitySchemas") == 0;
}

static void set_decode_error(struct call *c, const char *msg)
{
    if (c->decode_error)
        return;
    c->decode_error = rec_quoted_without(c, msg);
    if (!c->decode_error)
        c->decode_error = rec_dupstr(msg);
}

/* Append one message's JSON to out. schema_sha: the message's digest
 * when it is a provider schema (stored once, by hash, in schemas). */
static void render_message(recorder *r, struct call *c, enum recorder_direction dir,
                           const unsigned char *p, size_t n, const char *schema_sha, tftap_buf *out)
{
    char sha[65];
    if (schema_sha) {
        tftap_buf_printf(out, "{\"$schema\":\"%s\",\"size\":%zu}", schema_sha, n);
        return;
    }
    dec_opts opts;
    memset(&opts, 0, sizeof opts);
    if (!r->opts.record_sensitive) {
        opts.redact = redact_hmac;
        opts.redact_ctx = r;
    }
    if (!c->memo)
        c->memo = dec_memo_new();
    opts.memo = c->memo;
    dec_error err = DEC_ERROR_INIT;
    size_t mark = out->len;
    r->decoding = opts.redact ? c : NULL;
    int rc = dec_message_to_json(c->method, dir == RECORDER_RESPONSE, p, n, r->schema, c->type_name,
                                 &opts, out, &err);
    r->decoding = NULL;
    if (rc == 0) {
        if (dir == RECORDER_RESPONSE)
            rec_quoted_cut_words(c, out, mark);
        dec_error_done(&err);
        return;
    }
    out->len = mark;
    if (out->data)
        out->data[mark] = '\0';
    tftap_sha256_hex(p, n, sha);
    if (rc == TFTAP_ENOTFOUND) {
        /* A method the decoder does not know: keep size and hash. */
        tftap_buf_printf(out, "{\"$raw\":{\"size\":%zu,\"sha256\":\"%s\"}}", n, sha);
    } else {
        tftap_buf e = TFTAP_BUF_INIT;
        dec_error_format(&err, &e);
        set_decode_error(c, tftap_buf_cstr(&e));
        tftap_buf_puts(out, "{\"$decode_error\":");
        tftap_buf_json_string(out, e.data ? e.data : "", e.len);
        tftap_buf_printf(out, ",\"size\":%zu,\"sha256\":\"%s\"}", n, sha);
        tftap_buf_done(&e);
    }
    dec_error_done(&err);
}

static void side_add(recorder *r, struct call *c, struct side *s, enum recorder_direction dir,
                     const unsigned char *p, size_t n, int spilled, const char *schema_sha)
{
    if (s->handed) {
        /* A second message where one was expected, after the first went
         * out alone: the column will hold the later ones only. */
        s->handed = 0;
        set_decode_error(c, "a message of this call was written alone before the next came: "
                            "this column lacks it");
    }
    s->sent = 0;
    size_t before = s->json.len;
    /* Room for what the JSON usually takes (a little more than the
     * message), so that it is not grown and copied a dozen times. */
    if (n < ((size_t)64 << 20))
        tftap_buf_reserve(&s->json, n + n / 2 + 256);
    if (s->count > 0)
        tftap_buf_putc(&s->json, ',');
    render_message(r, c, dir, p, n, schema_sha, &s->json);
    if (spilled) {
        s->big += s->json.len - before; /* outside the bound: one at a time */
        c->big = 1;
    } else
        r->rendered_bytes += s->json.len - before;
    s->count++;
    s->bytes += (int64_t)n;
}

/* Write a side as the JSON its column holds (NULL: no message). */
static const char *side_text(struct call *c, struct side *s, tftap_buf *tmp)
{
    if (s->count == 0)
        return NULL;
    if (tftap_buf_failed(&s->json))
        return "{\"$error\":\"out of memory rendering the message\"}";
    if (!c->stream && s->count == 1)
        return tftap_buf_cstr(&s->json);
    tftap_buf_reset(tmp);
    tftap_buf_putc(tmp, '[');
    tftap_buf_append(tmp, s->json.data, s->json.len);
    tftap_buf_putc(tmp, ']');
    return tftap_buf_failed(tmp) ? NULL : tftap_buf_cstr(tmp);
}

/* Re-render every retained call with the schema now known. */
static void redecode_retained(recorder *r)
{
    for (struct call *c = r->calls; c; c = c->lnext) {
        if (!c->retain)
            continue;
        tftap_buf_reset(&c->req.json);
        tftap_buf_reset(&c->resp.json);
        c->req.sent = c->resp.sent = 0;
        c->req.count = c->resp.count = 0;
        c->req.bytes = c->resp.bytes = 0;
        free(c->decode_error);
        c->decode_error = NULL;
        for (struct rawmsg *m = c->raws; m; m = m->next)
            /* never a schema: those are not retained */
            side_add(r, c, m->dir == RECORDER_REQUEST ? &c->req : &c->resp, m->dir, m->bytes,
                     m->len, 0, NULL);
        c->decoded_with_schema = 1;
        mark_dirty(r, c);
        rec_call_free_raws(r, c);
    }
}

/* ---- writer: schema ------------------------------------------------------ */

static void apply_identity(recorder *r)
{
    if (!r->schema || !r->identity_raw || r->identity_applied)
        return;
    dec_error err = DEC_ERROR_INIT;
    if (dec_schema_add_identities(r->schema, r->proc.protocol ? r->proc.protocol : 5,
                                  r->identity_raw, r->identity_raw_len, &err) == 0)
        r->identity_applied = 1;
    dec_error_done(&err);
}

static void emit_schema(recorder *r, const char *kind, const char *sha, const unsigned char *raw,
                        size_t len, int protocol, const char *source);

/* Use a schema from now on; re-decode what waited for one. raw/len are
 * also stored (once per hash) unless the schema came from the database. */
static int schema_adopt(recorder *r, int protocol, const unsigned char *p, size_t n,
                        const char *sha, const char *source)
{
    dec_schema *s = NULL;
    dec_error err = DEC_ERROR_INIT;
    int rc = dec_schema_from_provider_schema(protocol, p, n, NULL, &s, &err);
    dec_error_done(&err);
    if (rc)
        return rc;
    dec_schema_free(r->schema);
    r->schema = s;
    /* What the calls remember was rendered with the old schema's types. */
    for (struct call *c = r->calls; c; c = c->lnext)
        dec_memo_clear(c->memo);
    memcpy(r->schema_sha, sha, 65);
    r->schema_source = source;
    r->identity_applied = 0;
    apply_identity(r);
    redecode_retained(r);
    emit_schema(r, "provider", sha, strcmp(source, "response") == 0 ? p : NULL, n, protocol,
                source);
    return 0;
}

/* ---- ops: what the decoder hands the SQL thread ------------------------- */

static struct op *op_new(recorder *r, enum op_kind kind)
{
    struct op *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->kind = kind;
    o->size = sizeof *o;
    /* Other recorders of the run may be waiting to borrow a schema. */
    if (kind == OP_SCHEMA || kind == OP_PROCESS)
        r->out_urgent = 1;
    *r->out_tail = o;
    r->out_tail = &o->next;
    return o;
}

static char *dup_counted(struct op *o, const char *s)
{
    if (!s)
        return NULL;
    o->size += strlen(s) + 1;
    return rec_dupstr(s);
}

static unsigned char *dup_bytes(struct op *o, const void *p, size_t n)
{
    unsigned char *b = malloc(n ? n : 1);
    if (b && n)
        memcpy(b, p, n);
    o->size += n;
    return b;
}

static void emit_schema(recorder *r, const char *kind, const char *sha, const unsigned char *raw,
                        size_t len, int protocol, const char *source)
{
    struct op *o = op_new(r, OP_SCHEMA);
    if (!o)
        return;
    o->schema_kind = kind;
    o->schema_source = source;
    snprintf(o->schema_sha, sizeof o->schema_sha, "%s", sha);
    o->protocol = protocol;
    if (raw) {
        o->bytes = dup_bytes(o, raw, len);
        o->len = len;
    }
}

/* A side's column text for an op, taking the side's buffer where it is
 * the text itself (one message of a unary call), else building the array
 * in it. The side is left empty. NULL: no message. */
static char *take_side(struct op *o, struct call *c, struct side *s)
{
    if (s->count == 0)
        return NULL;
    if (tftap_buf_failed(&s->json)) {
        tftap_buf_done(&s->json);
        return dup_counted(o, "{\"$error\":\"out of memory rendering the message\"}");
    }
    if (c->stream || s->count != 1) {
        /* '[' ... ']' around it: one move within the buffer. */
        if (tftap_buf_reserve(&s->json, 2) != 0) {
            tftap_buf_done(&s->json);
            return NULL;
        }
        memmove(s->json.data + 1, s->json.data, s->json.len);
        s->json.data[0] = '[';
        s->json.data[s->json.len + 1] = ']';
        s->json.len += 2;
        s->json.data[s->json.len] = '\0';
    }
    char *text = s->json.data;
    size_t big = s->big < s->json.len + 1 ? s->big : s->json.len + 1;
    o->size += s->json.len + 1 - big;
    o->big += big;
    s->json = (tftap_buf)TFTAP_BUF_INIT;
    s->big = 0;
    s->count = 0;
    return text;
}

/* A side's column for an op: moved, copied, or kept as written before. A
 * side is written once for each change: an image after one that holds it
 * as it is keeps the column (a slow call's request is not written again
 * with its response). A big side of a unary call goes out alone, moved, as
 * soon as it is whole, so that its JSON is held once; later images keep the
 * column. Spans want the values with the last image: then it carries them. */
static char *side_column(recorder *r, struct op *o, struct call *c, struct side *s, int final,
                         int *keep, tftap_buf *tmp)
{
    *keep = 0;
    if (s->handed) {
        *keep = 1;
        return NULL;
    }
    if (s->sent && !r->opts.on_call) {
        *keep = 1;
        return NULL;
    }
    if (s->count > 0 && !r->opts.on_call)
        s->sent = 1; /* this image holds it (if the copy fails, the $error does) */
    if (s->big > 0 && !final) {
        if (c->stream || s->count != 1 || c->retain || r->opts.on_call)
            return NULL; /* written with the last image, never copied meanwhile */
        int64_t count = s->count;
        char *text = take_side(o, c, s);
        s->count = count; /* the call still has its message */
        s->handed = text != NULL;
        return text;
    }
    if (final)
        return take_side(o, c, s);
    return dup_counted(o, side_text(c, s, tmp));
}

/* One side's value for opts.on_call: the stored text when it is redacted
 * already, else redacted again as a default record would store it. */
static const char *report_value(recorder *r, struct call *c, int is_response, const char *json,
                                tftap_buf *tmp, int *withheld)
{
    *withheld = 0;
    if (json == NULL || !r->opts.record_sensitive)
        return json;
    dec_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.redact = redact_hmac;
    opts.redact_ctx = r;
    dec_error err = DEC_ERROR_INIT;
    int rc = r->have_key ? dec_message_json_redact(c->method, is_response, json, strlen(json),
                                                   r->schema, c->type_name, &opts, tmp, &err)
                         : TFTAP_EINVAL;
    dec_error_done(&err);
    if (rc != 0 || tftap_buf_failed(tmp)) {
        *withheld = 1; /* nothing tells which of its parts are secret */
        return NULL;
    }
    return tftap_buf_cstr(tmp);
}

/* Tell opts.on_call of a call's final image (req/resp: its columns). */
static void report_call(recorder *r, struct call *c, const char *req, const char *resp)
{
    if (r->opts.on_call == NULL || c->reported || !c->ended)
        return;
    c->reported = 1;
    tftap_buf rq = TFTAP_BUF_INIT, rs = TFTAP_BUF_INIT;
    recorder_call_summary s = {
        .call_seq = (int64_t)c->call_id,
        .method = c->method,
        .type_name = c->type_name,
        .status_message = c->status_message,
        .started_us = c->started_us,
        .ended_us = c->ended_us,
        .status = c->status,
        .request_bytes = c->req.bytes,
        .response_bytes = c->resp.bytes,
        .request_count = c->req.count,
        .response_count = c->resp.count,
        .response_json = resp,
    };
    if (r->opts.on_call_values) {
        s.request_value = report_value(r, c, 0, req, &rq, &s.request_withheld);
        s.response_value = report_value(r, c, 1, resp, &rs, &s.response_withheld);
    }
    r->opts.on_call(r->opts.on_call_ctx, &s);
    tftap_buf_done(&rq);
    tftap_buf_done(&rs);
}

/* The call's whole state as a row image. */
static int emit_call(recorder *r, struct call *c)
{
    struct op *o = op_new(r, OP_CALL);
    if (!o)
        return TFTAP_ENOMEM;
    tftap_buf t = TFTAP_BUF_INIT;
    o->call_seq = (int64_t)c->call_id;
    o->stream = c->stream;
    o->ended = c->ended;
    o->status = c->status;
    o->started_us = c->started_us;
    o->ended_us = c->ended_us;
    o->req_bytes = c->req.bytes;
    o->resp_bytes = c->resp.bytes;
    o->req_count = c->req.count;
    o->resp_count = c->resp.count;
    o->method = dup_counted(o, c->method);
    o->status_message = dup_counted(o, c->status_message);
    o->type_name = dup_counted(o, c->type_name);
    /* Its last image (the call is pruned next): the rendered JSON is handed
     * over, not copied. */
    int final = c->ended && !c->retain;
    o->req_json = side_column(r, o, c, &c->req, final, &o->req_keep, &t);
    o->resp_json = side_column(r, o, c, &c->resp, final, &o->resp_keep, &t);
    /* Writing any image of a big call reads its big columns back (SQLite
     * rewrites a row whole): it counts as big, so that the next spilled
     * message waits for it. */
    if (c->big && o->big == 0)
        o->big = 1;
    o->decode_error = dup_counted(o, c->decode_error);
    if (c->decoded_with_schema && r->schema)
        memcpy(o->schema_sha, r->schema_sha, 65);
    tftap_buf_done(&t);
    if (c->ended && (!c->retain || r->closing))
        report_call(r, c, o->req_json, o->resp_json);
    c->dirty = 0;
    c->emitted = 1;
    return 0;
}

static void emit_dirty_calls(recorder *r)
{
    r->rendered_bytes = 0;
    r->dirty_calls = 0;
    r->dirty_bytes = 0;
    for (struct call *c = r->calls; c; c = c->lnext)
        if (c->dirty)
            emit_call(r, c);
}

/* Finished calls whose last state has been handed over need no memory. */
static void prune_calls(recorder *r)
{
    struct call **pp = &r->calls;
    r->calls_tail = &r->calls;
    while (*pp) {
        struct call *c = *pp;
        if (c->ended && !c->dirty && !c->retain) {
            /* Clean means its last image was built (every event marks a
             * call dirty; only emit_call clears that). */
            assert(c->emitted);
            *pp = c->lnext;
            struct call **b = bucket(r, c->call_id);
            while (*b != c)
                b = &(*b)->hnext;
            *b = c->hnext;
            rec_call_free(r, c);
        } else {
            pp = &c->lnext;
            r->calls_tail = &c->lnext;
        }
    }
}

/* Give the SQL thread everything built so far. */
static void hand_over(recorder *r)
{
    /* Counted while rendered (admit); from here on as ops. */
    size_t counted = r->out_counted;
    r->out_counted = 0;
    r->owed_since_ms = 0;
    r->out_urgent = 0;
    if (!r->out) {
        if (counted) {
            pthread_mutex_lock(&r->mu);
            rec_release(r, counted);
            pthread_mutex_unlock(&r->mu);
        }
        return;
    }
    /* The last op carries the count: written once all of them commit. */
    struct op *last = r->out;
    size_t bytes = 0, big = 0;
    int urgent = 0;
    for (struct op *o = r->out; o; o = o->next) {
        bytes += o->size;
        big += o->big;
        last = o;
        urgent |= o->kind == OP_SCHEMA || o->kind == OP_PROCESS;
    }
    last->events += r->out_events;
    r->out_events = 0;
    pthread_mutex_lock(&r->mu);
    /* The ops change hands: the SQL thread's from here (the decoder keeps
     * no pointer into them), counted as ops instead of as rendering. */
    assert(*r->ops_tail == NULL && *r->out_tail == NULL);
    *r->ops_tail = r->out;
    r->ops_tail = r->out_tail;
    rec_release(r, counted);
    r->inflight_bytes += bytes;
    r->ops_bytes += bytes;
    r->big_inflight += big;
    if (r->inflight_bytes > r->peak_bytes)
        r->peak_bytes = r->inflight_bytes;
    /* A gathering SQL thread wakes at its deadline anyway; only a bound
     * filling up cuts its wait short. */
    r->ops_urgent |= urgent;
    if (!r->sql_gathering || urgent || big || r->inflight_bytes >= r->opts.max_queue_bytes / 4)
        pthread_cond_signal(&r->scv);
    pthread_mutex_unlock(&r->mu);
    r->out = NULL;
    r->out_tail = &r->out;
}

/* ---- decoding one event ------------------------------------------------------ */

static void retain_raw(recorder *r, struct call *c, const struct event *ev)
{
    if (r->schema || r->retain_disabled || !dec_method_protocol(c->method) ||
        is_provider_schema_method(c->method))
        return;
    if (r->retained_bytes + ev->len > RETAIN_MAX_BYTES) {
        r->retain_disabled = 1;
        return;
    }
    struct rawmsg *m = malloc(sizeof *m + ev->len);
    if (!m)
        return;
    m->next = NULL;
    m->dir = ev->dir;
    m->len = ev->len;
    memcpy(m->bytes, ev->bytes, ev->len);
    *c->raws_tail = m;
    c->raws_tail = &m->next;
    c->raw_bytes += ev->len;
    r->retained_bytes += ev->len;
    c->retain = 1;
}

/* Apply one event to the call's state in memory. */
static void apply_event(recorder *r, struct event *ev)
{
    struct call *c = call_get(r, ev->call_id, ev->kind == EV_BEGIN ? ev->text : NULL, ev->t_us);
    if (!c)
        return; /* out of memory: this event is lost */
    switch (ev->kind) {
    case EV_BEGIN:
        if (!c->method[0] && ev->text[0]) {
            char *m = rec_dupstr(ev->text);
            if (m) {
                free(c->method);
                c->method = m;
                c->stream = method_is_stream(c->method);
            }
        }
        c->started_us = ev->t_us;
        mark_dirty(r, c);
        break;
    case EV_MESSAGE: {
        struct side *s = ev->dir == RECORDER_REQUEST ? &c->req : &c->resp;
        if (ev->dir == RECORDER_REQUEST && c->req.count == 0 && !c->type_name) {
            char *tn = NULL;
            if (dec_request_type_name(c->method, ev->bytes, ev->len, &tn) == 0)
                c->type_name = tn;
            else
                free(tn);
        }
        if (s->count == 1 && !c->stream)
            c->stream = 1; /* a second message on a method we took for unary */
        /* A provider schema is hashed once: its digest names it in the
         * call's column and in schemas. */
        int is_schema = ev->dir == RECORDER_RESPONSE && is_provider_schema_method(c->method);
        char sha[65];
        if (is_schema)
            tftap_sha256_hex(ev->bytes, ev->len, sha);
        side_add(r, c, s, ev->dir, ev->bytes, ev->len, ev->spill_path != NULL,
                 is_schema ? sha : NULL);
        if (r->schema)
            c->decoded_with_schema = 1;
        if (!ev->spill_path) /* the file is gone after this: not kept for later */
            retain_raw(r, c, ev);
        mark_dirty(r, c);
        if (is_schema) {
            if (!r->schema || strcmp(sha, r->schema_sha) != 0 ||
                strcmp(r->schema_source, "response") != 0)
                schema_adopt(r, dec_method_protocol(c->method), ev->bytes, ev->len, sha,
                             "response");
            /* The schema's row takes the bytes the event owns rather than a
             * copy: a schema of tens of MB is then held once, not twice. */
            struct op *last = NULL;
            for (struct op *o = r->out; o; o = o->next)
                last = o;
            if (ev->owned && last && last->kind == OP_SCHEMA && last->bytes &&
                last->len == ev->len) {
                assert(ev->bytes == ev->owned); /* what it gives is what it owns */
                free(last->bytes);
                last->bytes = ev->owned;
                ev->owned = NULL; /* ev->bytes stays valid: the op is not handed over yet */
            }
        }
        if (ev->dir == RECORDER_RESPONSE && is_identity_schema_method(c->method) &&
            !r->identity_raw) {
            r->identity_raw = malloc(ev->len ? ev->len : 1);
            if (r->identity_raw) {
                memcpy(r->identity_raw, ev->bytes, ev->len);
                r->identity_raw_len = ev->len;
                tftap_sha256_hex(ev->bytes, ev->len, r->identity_sha);
                apply_identity(r);
                emit_schema(r, "identity", r->identity_sha, ev->bytes, ev->len,
                            dec_method_protocol(c->method), "response");
            }
        }
        c->msg_seq++;
        if (r->opts.keep_raw) {
            /* The row must exist before its messages: SQL applies in order. */
            if (!c->emitted)
                emit_call(r, c);
            struct op *o = op_new(r, OP_RAW);
            if (o) {
                o->call_seq = (int64_t)c->call_id;
                o->msg_seq = c->msg_seq;
                o->dir = ev->dir;
                o->t_us = ev->t_us;
                o->bytes = dup_bytes(o, ev->bytes, ev->len);
                o->len = ev->len;
            }
        }
        break;
    }
    case EV_END:
        c->ended = 1;
        c->ended_us = ev->t_us;
        c->status = ev->status;
        free(c->status_message);
        c->status_message = ev->text[0] ? rec_quoted_without(c, ev->text) : NULL;
        if (ev->text[0] && !c->status_message)
            c->status_message = rec_dupstr(ev->text);
        mark_dirty(r, c);
        break;
    }
}

/* The digest an earlier process recorded for the same file unchanged
 * (stat as binary_stat, kept next to the digest), asked of the SQL thread
 * (one indexed read), where hashing the file would read all of it. 1 with
 * sha (65 bytes) filled. No answer within 2 s (a database busy, or not
 * there) says 0, and the file is hashed. */
static int known_digest(recorder *r, const char *stat_key, char sha[65])
{
    pthread_mutex_lock(&r->mu);
    snprintf(r->digest_stat, sizeof r->digest_stat, "%s", stat_key);
    r->digest_sha[0] = '\0';
    r->digest_answered = 0;
    r->digest_asked = 1;
    pthread_cond_signal(&r->scv);
    struct timespec until;
    tftap_deadline_in(&until, 2000);
    while (!r->digest_answered && !(r->sql_tried && !r->sql_ok) &&
           pthread_cond_timedwait(&r->cv, &r->mu, &until) == 0)
        ;
    int found = r->digest_answered && r->digest_sha[0];
    if (found)
        memcpy(sha, r->digest_sha, 65);
    r->digest_asked = 0;
    pthread_mutex_unlock(&r->mu);
    return found;
}

/* The writer's copy of the process details, and the binary's digest. */
static void sync_procinfo(recorder *r)
{
    struct procinfo p = {0};
    pthread_mutex_lock(&r->mu);
    if (r->pinfo.changed) {
        p.provider = rec_dupstr(r->pinfo.provider);
        p.version = rec_dupstr(r->pinfo.version);
        p.binary_path = rec_dupstr(r->pinfo.binary_path);
        p.start_error = rec_dupstr(r->pinfo.start_error);
        p.protocol = r->pinfo.protocol;
        p.pid = r->pinfo.pid;
        p.changed = 1;
        r->pinfo.changed = 0;
    }
    pthread_mutex_unlock(&r->mu);
    if (!p.changed)
        return;
    /* The same binary told again (its protocol known once the provider has
     * started): its digest stands. */
    int same_binary = r->have_binary_sha && p.binary_path && r->proc.binary_path &&
                      strcmp(p.binary_path, r->proc.binary_path) == 0;
    rec_procinfo_done(&r->proc);
    r->proc = p;
    r->proc_dirty = 1;
    if (same_binary)
        return;
    r->have_binary_sha = 0;
    r->binary_stat[0] = '\0';
    if (!p.binary_path)
        return;
    FILE *f = fopen(p.binary_path, "rb");
    if (!f)
        return;
    struct stat st;
    if (fstat(fileno(f), &st) == 0)
        snprintf(r->binary_stat, sizeof r->binary_stat, "%ju:%ju:%jd:%jd.%09ld:%jd.%09ld",
                 (uintmax_t)st.st_dev, (uintmax_t)st.st_ino, (intmax_t)st.st_size,
                 (intmax_t)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (intmax_t)st.st_ctim.tv_sec,
                 st.st_ctim.tv_nsec);
    if (r->binary_stat[0] && known_digest(r, r->binary_stat, r->binary_sha256)) {
        fclose(f);
        r->have_binary_sha = 1;
        r->last_schema_poll_ms = 0; /* look for an earlier schema now */
        r->borrow_tried = 0;
        return;
    }
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char chunk[65536], dig[EVP_MAX_MD_SIZE];
    unsigned dl = 0;
    int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1;
    size_t n;
    while (ok && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        ok = EVP_DigestUpdate(md, chunk, n) == 1;
    if (ok && !ferror(f) && EVP_DigestFinal_ex(md, dig, &dl) == 1 && dl == 32) {
        tftap_hex_encode(dig, 32, r->binary_sha256);
        r->have_binary_sha = 1;
        r->last_schema_poll_ms = 0; /* look for an earlier schema now */
        r->borrow_tried = 0;
    }
    EVP_MD_CTX_free(md);
    fclose(f);
}

static void emit_process(recorder *r)
{
    struct op *o = op_new(r, OP_PROCESS);
    if (!o)
        return;
    o->provider = dup_counted(o, r->proc.provider);
    o->version = dup_counted(o, r->proc.version);
    o->binary_path = dup_counted(o, r->proc.binary_path);
    o->start_error = dup_counted(o, r->proc.start_error);
    o->protocol = r->proc.protocol;
    o->pid = r->proc.pid;
    if (r->have_binary_sha) {
        memcpy(o->binary_sha, r->binary_sha256, 65);
        memcpy(o->binary_stat, r->binary_stat, sizeof o->binary_stat);
    }
    r->proc_dirty = 0;
}

/* The database's state as the SQL thread last saw it. */
static int sql_ready(recorder *r)
{
    pthread_mutex_lock(&r->mu);
    /* Until the SQL thread has tried once, events wait in the queue rather
     * than count as lost. */
    while (!r->sql_tried)
        pthread_cond_wait(&r->cv, &r->mu);
    int ok = r->sql_ok && r->key_ready;
    if (ok && !r->have_key) {
        memcpy(r->key, r->shared_key, sizeof r->key);
        r->have_key = 1;
    }
    pthread_mutex_unlock(&r->mu);
    if (ok && !r->mac)
        mac_setup(r);
    return ok;
}

/* Without a schema of its own, take the one an earlier recording of the
 * same provider binary saw (the client caches schemas and may never ask).
 * The SQL thread looks it up; the answer comes back through mu. */
static void poll_borrowed_schema(recorder *r)
{
    if (r->schema || !r->have_binary_sha)
        return;
    int64_t now = tftap_mono_ms();
    unsigned char *raw = NULL;
    size_t len = 0;
    int proto = 0;
    char sha[65] = "";
    pthread_mutex_lock(&r->mu);
    if (r->borrow_ready) {
        raw = r->borrow_raw;
        len = r->borrow_len;
        proto = r->borrow_protocol;
        memcpy(sha, r->borrow_sha, sizeof sha);
        r->borrow_raw = NULL;
        r->borrow_ready = 0;
    } else if (!r->borrow_asked &&
               (!r->last_schema_poll_ms || now - r->last_schema_poll_ms >= SCHEMA_POLL_MS)) {
        memcpy(r->borrow_want, r->binary_sha256, sizeof r->borrow_want);
        r->borrow_asked = 1;
        r->last_schema_poll_ms = now;
        pthread_cond_signal(&r->scv);
    }
    pthread_mutex_unlock(&r->mu);
    if (raw && !r->schema)
        schema_adopt(r, proto, raw, len, sha, "earlier");
    free(raw);
}

/* Ask for an earlier schema and wait (a bounded time) for the answer:
 * decoding a first batch without it would leave calls undecoded until the
 * next poll, or for good if the run ends first. */
static void borrow_sync(recorder *r, unsigned max_ms)
{
    if (r->schema || !r->have_binary_sha)
        return;
    pthread_mutex_lock(&r->mu);
    if (!r->borrow_ready) {
        memcpy(r->borrow_want, r->binary_sha256, sizeof r->borrow_want);
        r->borrow_asked = 1;
        pthread_cond_signal(&r->scv);
        struct timespec ts;
        tftap_deadline_in(&ts, max_ms);
        while (r->borrow_asked && r->sql_ok && pthread_cond_timedwait(&r->cv, &r->mu, &ts) == 0)
            ;
    }
    r->last_schema_poll_ms = tftap_mono_ms();
    pthread_mutex_unlock(&r->mu);
    poll_borrowed_schema(r);
}

/* What was lost since the last gap op, and why, as one. */
static void emit_gap(recorder *r)
{
    struct op *o = op_new(r, OP_GAP);
    if (!o)
        return; /* told with the next one */
    o->gap_seq = ++r->gap_seq;
    o->lost = r->lost;
    memcpy(o->lost_why, r->lost_why, sizeof o->lost_why);
    r->lost = 0;
    memset(r->lost_why, 0, sizeof r->lost_why);
}

/* Whether a gap op is owed: events lost, or a shim's death (told even
 * when nothing was lost). */
static int gap_owed(const recorder *r)
{
    return r->lost || r->lost_why[RECORDER_LOST_SHIM_DIED];
}

/* The process's details and the gap, when owed, as ops. */
static void emit_owed(recorder *r)
{
    if (r->proc_dirty)
        emit_process(r);
    if (gap_owed(r))
        emit_gap(r);
}

/* A message in a spill file: decoded once the big message before it is
 * written (one in memory at a time), read from a mapping of the file, and
 * its call's image handed over at once, so that its JSON leaves memory. */
static void apply_spilled(recorder *r, struct event *e)
{
    emit_dirty_calls(r);
    prune_calls(r);
    hand_over(r);
    pthread_mutex_lock(&r->mu);
    while (r->big_inflight > 0 && r->sql_ok && !r->sql_stuck) {
        struct timespec ts;
        tftap_deadline_in(&ts, 1000);
        pthread_cond_timedwait(&r->cv, &r->mu, &ts);
    }
    pthread_mutex_unlock(&r->mu);
    int fd = open(e->spill_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    void *map = MAP_FAILED;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        (uint64_t)st.st_size <= DEC_DEFAULT_MAX_BYTES)
        map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (fd >= 0)
        close(fd);
    if (map == MAP_FAILED) {
        rec_log(r, "cannot read the spill file %s: %s", e->spill_path,
                fd < 0 ? strerror(errno) : "not a regular file of a size it may have");
        r->lost++;
        r->lost_why[RECORDER_LOST_SPILL_FAILED] = 1;
        return;
    }
    (void)madvise(map, (size_t)st.st_size, MADV_SEQUENTIAL);
    e->bytes = map;
    e->len = (size_t)st.st_size;
    apply_event(r, e);
    munmap(map, (size_t)st.st_size);
    e->bytes = NULL;
    e->len = 0;
    emit_dirty_calls(r);
    prune_calls(r);
    hand_over(r);
}

/* ---- the decoding stage ------------------------------------------------------ */

/* How long decoded state gathers before it is handed over: at most a
 * quarter of commit_ms, as the stage last read it under mu. */
static int64_t gather_ms(const recorder *r)
{
    return r->stage_commit_ms / 4 < DECODE_GATHER_MS ? r->stage_commit_ms / 4 : DECODE_GATHER_MS;
}

/* Under mu: losses told by callers (recorder_lost, dropped events) become the
 * stage's own, to be written as the next gap. */
static void fold_lost(recorder *r)
{
    for (int why = 0; why < REC_LOST_WHYS; why++)
        if (r->told_lost[why]) {
            r->lost += r->told_lost[why];
            r->lost_why[why] = 1;
            r->told_lost[why] = 0;
        }
    if (r->told_shim_died) {
        r->lost_why[RECORDER_LOST_SHIM_DIED] = 1;
        r->told_shim_died = 0;
    }
}

/* Hand everything decoded so far to the SQL thread. */
static void flush(recorder *r)
{
    emit_dirty_calls(r);
    prune_calls(r);
    hand_over(r);
}

/* Tell the SQL thread when rec_decoder_idle is due: once what was decoded
 * has gathered (no caller may come to hand it over), or when to look for a
 * schema another recorder wrote. Locks mu only when the answer changed. */
static void note_idle(recorder *r, int64_t not_before)
{
    int64_t due = 0;
    if (!r->decoder_done) {
        if (r->out || r->dirty_calls || r->proc_dirty || gap_owed(r))
            due = (r->owed_since_ms ? r->owed_since_ms : tftap_mono_ms()) + gather_ms(r);
        if (!r->schema && r->have_binary_sha) {
            int64_t poll = r->last_schema_poll_ms + SCHEMA_POLL_MS;
            if (due == 0 || poll < due)
                due = poll;
        }
        if (due && due < not_before)
            due = not_before;
    }
    if (due == r->noted_due_ms)
        return;
    r->noted_due_ms = due;
    pthread_mutex_lock(&r->mu);
    r->idle_due_ms = due;
    if (due)
        pthread_cond_signal(&r->scv);
    pthread_mutex_unlock(&r->mu);
}

/* What was rendered and not yet handed over counts against the bound now,
 * not only at hand-over: else a caller refills the bound around it. */
static size_t rendered_out(const recorder *r)
{
    size_t out = r->rendered_bytes + r->dirty_bytes + r->dirty_calls * (sizeof(struct op) + 128);
    for (const struct op *o = r->out; o; o = o->next)
        out += o->size;
    return out;
}

/* Whether an event costing cost bytes may be decoded (else it is dropped,
 * counted): within the one bound, waiting for room up to opts.block_ms. A
 * blocking caller that waited in vain drops until the bound is half empty,
 * rather than be held again and again (a database locked for seconds). */
static int admit(recorder *r, size_t cost)
{
    int recount = ++r->accounted >= 16, log_full = 0;
    size_t out = 0;
    if (recount) {
        r->accounted = 0;
        out = rendered_out(r);
    }
    pthread_mutex_lock(&r->mu);
    r->stage_commit_ms = r->commit_ms;
    if (recount) {
        if (out >= r->out_counted)
            r->inflight_bytes += out - r->out_counted;
        else
            rec_release(r, r->out_counted - out);
        r->out_counted = out;
        if (r->inflight_bytes > r->peak_bytes)
            r->peak_bytes = r->inflight_bytes;
    }
    fold_lost(r);
    const size_t max = r->opts.max_queue_bytes;
    if (r->overflowing && r->inflight_bytes <= max / 2)
        r->overflowing = 0; /* room again: wait, not drop */
    if (!r->stop && !r->decoder_done && r->inflight_bytes + cost > max &&
        (r->out || r->dirty_calls)) {
        /* Full of what was decoded here: the SQL thread can only make room
         * once it has it. */
        pthread_mutex_unlock(&r->mu);
        flush(r);
        pthread_mutex_lock(&r->mu);
    }
    if (r->opts.block_ms && !r->overflowing && !r->stop && r->inflight_bytes > 0 &&
        r->inflight_bytes + cost > max) {
        struct timespec until;
        tftap_deadline_in(&until, r->opts.block_ms);
        while (!r->stop && r->inflight_bytes > 0 && r->inflight_bytes + cost > max)
            if (pthread_cond_timedwait(&r->room, &r->mu, &until) == ETIMEDOUT) {
                r->overflowing = 1;
                break;
            }
    }
    int drop = r->stop || r->decoder_done || r->inflight_bytes + cost > max;
    if (drop) {
        r->stats.dropped++;
        r->lost++;
        r->lost_why[RECORDER_LOST_QUEUE_FULL] = 1;
        if (!r->logged_full && !r->stop) {
            r->logged_full = 1;
            log_full = 1;
        }
    } else
        r->stats.events++;
    pthread_mutex_unlock(&r->mu);
    if (log_full)
        rec_log(r, "recorder queue full (%zu bytes): dropping records, counted as a gap", max);
    return !drop;
}

static void decode_one(recorder *r, struct event *ev)
{
    if (!sql_ready(r)) {
        r->lost++;
        r->lost_why[REC_LOST_DB] = 1;
        pthread_mutex_lock(&r->mu);
        r->stats.dropped++;
        pthread_mutex_unlock(&r->mu);
        return;
    }
    emit_owed(r);
    if (!r->borrow_tried && r->have_binary_sha) {
        r->borrow_tried = 1;
        borrow_sync(r, 5000);
    }
    poll_borrowed_schema(r);
    if (ev->spill_path)
        apply_spilled(r, ev);
    else
        apply_event(r, ev);
    r->out_events++;
    int64_t now = tftap_mono_ms();
    if (r->owed_since_ms == 0)
        r->owed_since_ms = now;
    /* Other recorders of the run may wait to borrow a schema: at once. */
    if (r->out_urgent || now - r->owed_since_ms >= gather_ms(r))
        flush(r);
}

void rec_decode(recorder *r, struct event *ev, size_t cost)
{
    pthread_mutex_lock(&r->dec_mu);
    if (admit(r, cost))
        decode_one(r, ev);
    /* Also after a drop: its gap is owed whether or not more events come. */
    note_idle(r, 0);
    rec_event_done(ev);
    pthread_mutex_unlock(&r->dec_mu);
}

void rec_decoder_sync(recorder *r)
{
    pthread_mutex_lock(&r->dec_mu);
    if (!r->decoder_done) {
        sync_procinfo(r);
        pthread_mutex_lock(&r->mu);
        fold_lost(r);
        pthread_mutex_unlock(&r->mu);
        note_idle(r, 0);
    }
    pthread_mutex_unlock(&r->dec_mu);
}

void rec_decoder_idle(recorder *r)
{
    if (pthread_mutex_trylock(&r->dec_mu) != 0)
        return; /* a caller is decoding: it hands over, or notes when to come back */
    if (!r->decoder_done) {
        pthread_mutex_lock(&r->mu);
        fold_lost(r);
        int tried = r->sql_tried;
        int64_t retry_ms = r->retry_ms;
        r->stage_commit_ms = r->commit_ms;
        pthread_mutex_unlock(&r->mu);
        if (tried && sql_ready(r)) {
            poll_borrowed_schema(r);
            emit_owed(r);
            flush(r);
            r->noted_due_ms = -1; /* told again, whatever it was */
            note_idle(r, 0);
        } else {
            /* Nowhere to write yet: what is owed waits for the database. */
            r->noted_due_ms = -1;
            note_idle(r, tftap_mono_ms() + retry_ms);
        }
    }
    pthread_mutex_unlock(&r->dec_mu);
}

void rec_decoder_close(recorder *r)
{
    pthread_mutex_lock(&r->dec_mu);
    if (r->decoder_done) {
        pthread_mutex_unlock(&r->dec_mu);
        return;
    }
    pthread_mutex_lock(&r->mu);
    fold_lost(r);
    pthread_mutex_unlock(&r->mu);
    /* Last words: whatever state is still owed, then the process's end. */
    unsigned schema_wait =
        r->opts.close_schema_wait_ms ? r->opts.close_schema_wait_ms : CLOSE_SCHEMA_WAIT_MS;
    int64_t schema_until = tftap_mono_ms() + schema_wait;
    while (!r->schema && r->retained_bytes && r->have_binary_sha && sql_ready(r)) {
        borrow_sync(r, 2000);
        if (r->schema || tftap_mono_ms() >= schema_until)
            break;
        struct timespec pause = {0, SCHEMA_POLL_MS / 5 * 1000000L};
        nanosleep(&pause, NULL);
    }
    emit_owed(r);
    r->closing = 1;
    emit_dirty_calls(r);
    /* Calls still waiting for a schema to be re-decoded with: as they are. */
    tftap_buf rq = TFTAP_BUF_INIT, rs = TFTAP_BUF_INIT;
    for (struct call *c = r->calls; c && r->opts.on_call; c = c->lnext)
        if (c->ended && !c->reported)
            report_call(r, c, side_text(c, &c->req, &rq), side_text(c, &c->resp, &rs));
    tftap_buf_done(&rq);
    tftap_buf_done(&rs);
    op_new(r, OP_END);
    hand_over(r);
    r->decoder_done = 1;
    note_idle(r, 0); /* nothing is due any more */
    pthread_mutex_lock(&r->mu);
    r->sql_stop = 1;
    pthread_cond_signal(&r->scv);
    pthread_mutex_unlock(&r->mu);
    pthread_mutex_unlock(&r->dec_mu);
}
