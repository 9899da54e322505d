/* decoder: rendered JSON redacted again. A record made with secrets kept
 * (--record-sensitive) is redacted when it leaves the machine (export,
 * bundles): its JSON is walked beside the message descriptors and the
 * schema, picking each value's type exactly as rendering did, and every
 * sensitive or write-only value becomes its HMAC marker. Rendering uses the
 * same walk for stored state (RawState.json), which it can only read as
 * JSON. */
#include "decoder/decoder_int.h"
#include "decoder/message_int.h"
#include "decoder/pb_int.h"
#include "decoder/schema_int.h"

#include <stdlib.h>
#include <string.h>

/* dec_message_json_redact's walk: the render state picks value types
 * exactly as rendering did; JSON in, JSON out. */
struct redact_walk {
    struct dec_render r;
    dec_error *err;
    int unsafe; /* a decoded value whose type is unknown: cannot tell what is secret */
};

static int type_has_sensitive(const dec_type *t, unsigned depth)
{
    if (!t || depth > DEC_DEFAULT_MAX_DEPTH)
        return 0;
    switch (t->kind) {
    case DEC_LIST:
    case DEC_SET:
    case DEC_MAP:
        return type_has_sensitive(t->elem, depth + 1);
    case DEC_OBJECT:
        for (size_t i = 0; i < t->n; i++)
            if (t->attrs[i].sensitive || t->attrs[i].write_only ||
                type_has_sensitive(t->attrs[i].type, depth + 1))
                return 1;
        return 0;
    case DEC_TUPLE:
        for (size_t i = 0; i < t->n; i++)
            if (type_has_sensitive(t->elems[i], depth + 1))
                return 1;
        return 0;
    default:
        return 0;
    }
}

/* The whole node replaced by its redacted form. */
static void redact_node(struct redact_walk *w, const sj_node *n)
{
    tftap_buf text = TFTAP_BUF_INIT;
    char hex[65];
    sj_write(n, &text);
    if (tftap_buf_failed(&text)) {
        w->r.out->failed = 1;
        return;
    }
    hex[0] = '\0';
    w->r.opts->redact(w->r.opts->redact_ctx, text.data ? text.data : "", text.len, hex);
    hex[64] = '\0';
    tftap_buf_printf(w->r.out, "{\"$sensitive\":\"hmac-sha256:%s\"}", hex);
    tftap_buf_done(&text);
}

static void put_key(tftap_buf *out, const sj_node *m)
{
    tftap_buf_json_string(out, m->key, m->key_len);
    tftap_buf_putc(out, ':');
}

/* Any JSON: every {"$sensitive": ...} in it redacted again, the rest copied. */
static void redact_generic(struct redact_walk *w, const sj_node *n)
{
    tftap_buf *out = w->r.out;
    if (sj_is_sensitive(n)) {
        redact_node(w, n);
        return;
    }
    if (n->kind != SJ_OBJECT && n->kind != SJ_ARRAY) {
        sj_write(n, out);
        return;
    }
    tftap_buf_putc(out, n->kind == SJ_OBJECT ? '{' : '[');
    for (const sj_node *c = n->child; c; c = c->next) {
        if (c != n->child)
            tftap_buf_putc(out, ',');
        if (n->kind == SJ_OBJECT)
            put_key(out, c);
        redact_generic(w, c);
    }
    tftap_buf_putc(out, n->kind == SJ_OBJECT ? '}' : ']');
}

/* A decoded value of type t: values at sensitive or write-only attributes
 * redacted, as the recorder does unless told not to. A value that does not
 * have t's shape is redacted whole when t holds anything sensitive. */
static void redact_value(struct redact_walk *w, const dec_type *t, const sj_node *n)
{
    tftap_buf *out = w->r.out;
    if (n->kind == SJ_NULL || sj_is_unknown(n) || sj_is_sensitive(n) || !t) {
        redact_generic(w, n);
        return;
    }
    int shape_ok;
    switch (t->kind) {
    case DEC_OBJECT:
    case DEC_MAP:
        shape_ok = n->kind == SJ_OBJECT;
        break;
    case DEC_LIST:
    case DEC_SET:
    case DEC_TUPLE:
        shape_ok = n->kind == SJ_ARRAY;
        break;
    default:
        /* Primitives and dynamic values: no attribute inside is marked. */
        redact_generic(w, n);
        return;
    }
    if (!shape_ok) {
        if (type_has_sensitive(t, 0))
            redact_node(w, n);
        else
            redact_generic(w, n);
        return;
    }
    tftap_buf_putc(out, n->kind == SJ_OBJECT ? '{' : '[');
    size_t i = 0;
    for (const sj_node *c = n->child; c; c = c->next, i++) {
        if (c != n->child)
            tftap_buf_putc(out, ',');
        if (n->kind == SJ_OBJECT)
            put_key(out, c);
        if (t->kind == DEC_OBJECT) {
            const struct dec_attr *a = dec_type_attr(t, c->key, c->key_len);
            if (!a) {
                /* Not of this schema: nothing tells whether it is secret. */
                if (c->kind == SJ_NULL || sj_is_unknown(c))
                    redact_generic(w, c);
                else
                    redact_node(w, c);
            } else if ((a->sensitive || a->write_only) && c->kind != SJ_NULL && !sj_is_unknown(c))
                redact_node(w, c);
            else
                redact_value(w, a->type, c);
        } else if (t->kind == DEC_TUPLE) {
            redact_value(w, i < t->n ? t->elems[i] : NULL, c);
        } else {
            redact_value(w, t->elem, c);
        }
    }
    tftap_buf_putc(out, n->kind == SJ_OBJECT ? '}' : ']');
}

int dec_raw_state_redacted(struct dec_render *r, const uint8_t *p, size_t n)
{
    sj_doc *doc = NULL;
    if (!dec_utf8_valid((const char *)p, n) || sj_parse((const char *)p, n, r->max_depth, &doc))
        return -1;
    struct redact_walk w = {.r = *r};
    const sj_node *root = sj_root(doc);
    const dec_type *t = dec_schema_lookup(r->c.schema, DEC_SCHEMA_RESOURCE, r->c.type_name);
    if (root->kind == SJ_NULL)
        redact_generic(&w, root);
    else if (t)
        redact_value(&w, t, root);
    else
        redact_node(&w, root);
    sj_free(doc);
    return 0;
}

static int is_digest_form(const sj_node *n)
{
    return n->kind == SJ_NULL ||
           (n->kind == SJ_OBJECT && (sj_get(n, "$undecoded") || sj_get(n, "$error")));
}

static void redact_message(struct redact_walk *w, const ProtobufCMessageDescriptor *d,
                           const sj_node *n);

/* One value of field f (an element of it when repeated). */
static void redact_field_value(struct redact_walk *w, const ProtobufCMessageDescriptor *owner,
                               const ProtobufCFieldDescriptor *f, const sj_node *n, size_t index)
{
    if (f->type == PROTOBUF_C_TYPE_BYTES && strcmp(f->name, "json") == 0 &&
        dec_pb_is_raw_state(owner)) {
        /* Stored state, embedded as JSON: it holds the secrets in clear. */
        const dec_type *t = dec_schema_lookup(w->r.c.schema, DEC_SCHEMA_RESOURCE, w->r.c.type_name);
        if (n->kind == SJ_NULL)
            redact_generic(w, n);
        else if (t)
            redact_value(w, t, n);
        else
            redact_node(w, n);
        return;
    }
    if (f->type == PROTOBUF_C_TYPE_MESSAGE && dec_pb_is_dynamic_value(f->descriptor)) {
        const dec_type *t = dec_value_ctx_type(&w->r.c, f->name, index);
        if (t)
            redact_value(w, t, n);
        else if (is_digest_form(n))
            redact_generic(w, n);
        else {
            w->unsafe = 1;
            redact_node(w, n);
        }
        return;
    }
    if (f->type == PROTOBUF_C_TYPE_MESSAGE && n->kind == SJ_OBJECT) {
        redact_message(w, f->descriptor, n);
        return;
    }
    redact_generic(w, n);
}

static void redact_message(struct redact_walk *w, const ProtobufCMessageDescriptor *d,
                           const sj_node *n)
{
    tftap_buf *out = w->r.out;
    if (n->kind != SJ_OBJECT) {
        redact_generic(w, n);
        return;
    }
    const char *saved_type = w->r.c.type_name;
    const sj_node *own = sj_get(n, "type_name");
    if (own && own->kind == SJ_STRING && own->len)
        w->r.c.type_name = own->str;
    int flatmap = dec_pb_is_raw_state(d);
    tftap_buf_putc(out, '{');
    for (const sj_node *c = n->child; c; c = c->next) {
        if (c != n->child)
            tftap_buf_putc(out, ',');
        put_key(out, c);
        const ProtobufCFieldDescriptor *f =
            c->key_len == strlen(c->key)
                ? protobuf_c_message_descriptor_get_field_by_name(d, c->key)
                : NULL;
        if (!f) {
            redact_generic(w, c);
        } else if (flatmap && strcmp(f->name, "flatmap") == 0 && c->kind == SJ_OBJECT) {
            /* Legacy state as flat "a.b" keys: no types to go by, so each
             * value is treated as a possible secret. */
            tftap_buf_putc(out, '{');
            for (const sj_node *e = c->child; e; e = e->next) {
                if (e != c->child)
                    tftap_buf_putc(out, ',');
                put_key(out, e);
                redact_node(w, e);
            }
            tftap_buf_putc(out, '}');
        } else if (f->label == PROTOBUF_C_LABEL_REPEATED && f->type == PROTOBUF_C_TYPE_MESSAGE &&
                   dec_pb_is_map_entry(f->descriptor) && c->kind == SJ_OBJECT) {
            const ProtobufCMessageDescriptor *ed = f->descriptor;
            const ProtobufCFieldDescriptor *vf = &ed->fields[1];
            tftap_buf_putc(out, '{');
            size_t i = 0;
            for (const sj_node *e = c->child; e; e = e->next, i++) {
                if (e != c->child)
                    tftap_buf_putc(out, ',');
                put_key(out, e);
                redact_field_value(w, ed, vf, e, i);
            }
            tftap_buf_putc(out, '}');
        } else if (f->label == PROTOBUF_C_LABEL_REPEATED && c->kind == SJ_ARRAY) {
            tftap_buf_putc(out, '[');
            size_t i = 0;
            for (const sj_node *e = c->child; e; e = e->next, i++) {
                if (e != c->child)
                    tftap_buf_putc(out, ',');
                redact_field_value(w, d, f, e, i);
            }
            tftap_buf_putc(out, ']');
        } else {
            redact_field_value(w, d, f, c, 0);
        }
    }
    tftap_buf_putc(out, '}');
    w->r.c.type_name = saved_type;
}

int dec_message_json_redact(const char *method, int is_response, const char *json, size_t n,
                            const dec_schema *schema, const char *type_name, const dec_opts *opts,
                            tftap_buf *out, dec_error *err)
{
    if (!opts || !opts->redact || !json) {
        dec_error_set(err, TFTAP_EINVAL, "", "nothing to redact with");
        return TFTAP_EINVAL;
    }
    unsigned max_depth = opts->limits.max_depth ? opts->limits.max_depth : TFTAP_JSON_MAX_DEPTH;
    sj_doc *doc = NULL;
    int rc = sj_parse(json, n, max_depth, &doc);
    if (rc) {
        dec_error_set(err, rc, "", "%s", rc == TFTAP_ENOMEM ? "out of memory" : "invalid JSON");
        return rc;
    }
    struct dec_method m;
    int known = dec_method_find(method, &m);
    struct redact_walk w = {
        .r =
            {
                .out = out,
                .opts = opts,
                .max_depth = max_depth,
                .c = {.schema = schema,
                      .rule = known ? dec_method_rule(&m) : DEC_RULE_NONE,
                      .type_name = type_name},
            },
        .err = err,
    };
    const ProtobufCMessageDescriptor *d = known ? (is_response ? m.m->output : m.m->input) : NULL;
    const sj_node *root = sj_root(doc);
    if (known && !is_response) {
        const ProtobufCFieldDescriptor *tf = dec_method_type_name_field(&m);
        const sj_node *own = tf && root->kind == SJ_OBJECT ? sj_get(root, tf->name) : NULL;
        if (own && own->kind == SJ_STRING && own->len)
            w.r.c.type_name = own->str;
    }
    if (w.r.c.rule == DEC_RULE_FUNCTION)
        w.r.c.fn = dec_schema_function(schema, w.r.c.type_name);
    size_t start = out->len;
    if (!d) {
        redact_generic(&w, root);
    } else if (root->kind == SJ_ARRAY) {
        /* A stream's messages. */
        tftap_buf_putc(out, '[');
        for (const sj_node *c = root->child; c; c = c->next) {
            if (c != root->child)
                tftap_buf_putc(out, ',');
            redact_message(&w, d, c);
        }
        tftap_buf_putc(out, ']');
    } else {
        redact_message(&w, d, root);
    }
    rc = 0;
    if (tftap_buf_failed(out)) {
        rc = TFTAP_ENOMEM;
        dec_error_set(err, rc, "", "out of memory");
    } else if (w.unsafe) {
        rc = TFTAP_ENOTFOUND;
        dec_error_set(err, rc, "", "a decoded value of %s has no schema to tell its secrets by",
                      w.r.c.type_name && dec_utf8_valid(w.r.c.type_name, strlen(w.r.c.type_name))
                          ? w.r.c.type_name
                          : "the call");
    }
    if (rc && !tftap_buf_failed(out)) {
        out->len = start;
        if (out->data)
            out->data[start] = '\0';
    }
    dec_value_ctx_done(&w.r.c);
    sj_free(doc);
    return rc;
}
