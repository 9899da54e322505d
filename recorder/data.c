/* recorder: what the recorder's files hold in common: what events own,
 * calls, ops and process details, freed here with everything they own, and the bound all
 * of it counts against (recorder_int.h). Under the three files that use it:
 * recorder.c (the caller's side), decode.c and sql.c. */
#include "recorder/recorder_int.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void rec_log(recorder *r, const char *fmt, ...)
{
    if (r->opts.log == NULL)
        return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    r->opts.log(r->opts.log_ctx, line);
}

char *rec_dupstr(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

void rec_procinfo_done(struct procinfo *p)
{
    free(p->provider);
    free(p->start_error);
    free(p->version);
    free(p->binary_path);
}

void rec_event_done(struct event *ev)
{
    /* An event owns the bytes taken from its caller unless it gave them to
     * a schema op (decode.c), and its spill file. */
    assert(ev->owned == NULL || ev->bytes == ev->owned);
    free(ev->owned);
    ev->owned = NULL;
    if (ev->spill_path) {
        (void)unlink(ev->spill_path);
        free(ev->spill_path);
        ev->spill_path = NULL;
    }
}

void rec_release(recorder *r, size_t bytes)
{
    /* Only what was counted leaves: the ops not yet committed are still in
     * the count. */
    assert(bytes <= r->inflight_bytes);
    r->inflight_bytes -= bytes;
    assert(r->ops_bytes <= r->inflight_bytes);
    pthread_cond_broadcast(&r->room);
}

void rec_call_free_raws(recorder *r, struct call *c)
{
    for (struct rawmsg *m = c->raws, *n; m; m = n) {
        n = m->next;
        free(m);
    }
    assert(c->raw_bytes <= r->retained_bytes);
    r->retained_bytes -= c->raw_bytes;
    c->raws = NULL;
    c->raws_tail = &c->raws;
    c->raw_bytes = 0;
    c->retain = 0;
}

void rec_call_free(recorder *r, struct call *c)
{
    rec_call_free_raws(r, c);
    free(c->method);
    free(c->status_message);
    free(c->type_name);
    free(c->decode_error);
    tftap_buf_done(&c->quoted);
    tftap_buf_done(&c->req.json);
    tftap_buf_done(&c->resp.json);
    dec_memo_free(c->memo);
    free(c);
}

/* ---- ops: what the decoder hands the SQL thread ------------------------- */

void rec_op_free(struct op *o)
{
    if (!o)
        return;
    free(o->method);
    free(o->status_message);
    free(o->type_name);
    free(o->req_json);
    free(o->resp_json);
    free(o->decode_error);
    free(o->bytes);
    free(o->provider);
    free(o->start_error);
    free(o->version);
    free(o->binary_path);
    free(o->reason);
    free(o);
}

void rec_op_list_free(struct op *o)
{
    while (o) {
        struct op *n = o->next;
        rec_op_free(o);
        o = n;
    }
}
