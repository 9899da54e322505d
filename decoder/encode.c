/* decoder: the inverse of the message renderer, for replay. A rendered
 * message goes back to protobuf by walking protobuf-c's descriptors the way
 * message.c renders them, writing fields in field-number order as Go does;
 * its DynamicValues go back to msgpack through encode_value.c. What the
 * rendering reduced (redacted values, private bytes, undecoded payloads,
 * unknown fields) cannot come back: docs/replay.md lists what replaces it. */
#include "decoder/decoder_int.h"
#include "decoder/message_int.h"
#include "decoder/pb_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- protobuf writing ------------------------------------------------------ */

static void pb_varint(tftap_buf *o, uint64_t v)
{
    char b[10];
    size_t n = 0;
    do {
        b[n++] = (char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    tftap_buf_append(o, b, n);
}

static void pb_tag(tftap_buf *o, uint32_t id, int wire)
{
    pb_varint(o, (uint64_t)id << 3 | (unsigned)wire);
}

static void pb_len(tftap_buf *o, uint32_t id, const void *p, size_t n)
{
    pb_tag(o, id, 2);
    pb_varint(o, n);
    tftap_buf_append(o, p, n);
}

static void pb_le(tftap_buf *o, uint64_t v, int n)
{
    char b[8];
    for (int i = 0; i < n; i++)
        b[i] = (char)(v >> (8 * i));
    tftap_buf_append(o, b, (size_t)n);
}

/* ---- messages -------------------------------------------------------------- */

struct menc {
    struct dec_value_ctx c;
    const dec_limits *lim;
    unsigned max_depth;
    unsigned depth;
    dec_error *err;
    tftap_buf path; /* the JSON path of the node being encoded */
};

static int mfail(struct menc *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int mfail(struct menc *e, int code, const char *fmt, ...)
{
    if (e->err && !e->err->code) {
        char reason[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(reason, sizeof reason, fmt, ap);
        va_end(ap);
        /* Cut short, a name from the input may end inside a character:
         * the reason keeps only whole ones (users read it). */
        size_t len = strlen(reason), at = 0;
        while (at < len) {
            size_t k = tftap_utf8_len((const unsigned char *)reason + at, len - at);
            if (k == 0)
                break;
            at += k;
        }
        reason[at] = '\0';
        dec_error_set(e->err, code, tftap_buf_cstr(&e->path), "%s", reason);
    }
    return code;
}

/* Names and keys come from untrusted JSON: never copy invalid UTF-8 into
 * an error path. */
static void path_field(struct menc *e, const char *name)
{
    if (!dec_utf8_valid(name, strlen(name))) {
        tftap_buf_puts(&e->path, "[\"<invalid utf-8>\"]");
        return;
    }
    tftap_buf_putc(&e->path, '.');
    tftap_buf_puts(&e->path, name);
}

static void path_index(struct menc *e, size_t i)
{
    tftap_buf_printf(&e->path, "[%zu]", i);
}

static void path_key(struct menc *e, const char *k, size_t n)
{
    tftap_buf_putc(&e->path, '[');
    if (dec_utf8_valid(k, n))
        tftap_buf_json_string(&e->path, k, n);
    else
        tftap_buf_puts(&e->path, "\"<invalid utf-8>\"");
    tftap_buf_putc(&e->path, ']');
}

static void path_pop(struct menc *e, size_t mark)
{
    if (!tftap_buf_failed(&e->path) && e->path.data) {
        e->path.len = mark;
        e->path.data[mark] = '\0';
    }
}

/* An integer JSON number (or its text) within [min, max]. */
static int int_node(struct menc *e, const sj_node *v, int64_t min, uint64_t max, int64_t *sv,
                    uint64_t *uv)
{
    const char *s = v->kind == SJ_NUMBER || v->kind == SJ_STRING ? v->str : "";
    size_t n = v->kind == SJ_NUMBER || v->kind == SJ_STRING ? v->len : 0;
    int neg = n > 0 && s[0] == '-';
    size_t i = neg ? 1 : 0;
    if (i == n || strspn(s + i, "0123456789") != n - i)
        return mfail(e, TFTAP_EDECODE, "an integer is required");
    uint64_t mag = 0;
    for (; i < n; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (mag > (UINT64_MAX - d) / 10)
            return mfail(e, TFTAP_EDECODE, "integer out of range");
        mag = mag * 10 + d;
    }
    if (neg ? (min >= 0 || mag > (uint64_t)0 - (uint64_t)min) : mag > max)
        return mfail(e, TFTAP_EDECODE, "integer out of range");
    *uv = mag;
    *sv = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return 0;
}

static int base64_value(int c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

static int base64_decode(const char *s, size_t n, tftap_buf *out)
{
    uint32_t acc = 0;
    int bits = 0;
    size_t i = 0;
    for (; i < n && s[i] != '='; i++) {
        int v = base64_value((unsigned char)s[i]);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            tftap_buf_putc(out, (char)((acc >> bits) & 0xff));
        }
    }
    for (; i < n; i++)
        if (s[i] != '=')
            return -1;
    return 0;
}

static int enc_message(struct menc *e, const ProtobufCMessageDescriptor *d, const sj_node *obj,
                       tftap_buf *out);

/* A DynamicValue field: its value as msgpack, through the type the schema
 * gives this field. */
static int enc_dynamic(struct menc *e, const ProtobufCFieldDescriptor *f, const sj_node *v,
                       size_t index, tftap_buf *msg)
{
    const ProtobufCMessageDescriptor *dd = f->descriptor;
    const ProtobufCFieldDescriptor *mf =
        protobuf_c_message_descriptor_get_field_by_name(dd, "msgpack");
    /* What the renderer could not decode has no value to send. */
    if (v->kind == SJ_OBJECT && (sj_get(v, "$undecoded") || sj_get(v, "$error")) && v->n <= 2)
        return 0;
    const dec_type *t = dec_value_ctx_type(&e->c, f->name, index);
    if (!t) {
        if (v->kind == SJ_NULL)
            return 0;
        const char *tn = e->c.type_name;
        return mfail(e, TFTAP_EDECODE, "no schema for this value (type %s)",
                     !tn                              ? "not named"
                     : dec_utf8_valid(tn, strlen(tn)) ? tn
                                                      : "<invalid utf-8>");
    }
    tftap_buf mp = TFTAP_BUF_INIT;
    dec_error verr = DEC_ERROR_INIT;
    int rc = dec_encode_value_node(t, v, e->lim, &mp, &verr);
    if (rc) {
        if (e->err && !e->err->code) {
            /* The value's own path continues the message's. */
            const char *rel = verr.path ? verr.path : "";
            if (rel[0] == '.' && rel[1] == '[')
                rel++;
            tftap_buf full = TFTAP_BUF_INIT;
            tftap_buf_puts(&full, tftap_buf_cstr(&e->path));
            tftap_buf_puts(&full, rel);
            dec_error_set(e->err, rc, tftap_buf_cstr(&full), "%s",
                          verr.reason ? verr.reason : tftap_strerror(rc));
            tftap_buf_done(&full);
        }
    } else {
        pb_len(msg, mf->id, mp.data, mp.len);
        if (tftap_buf_failed(&mp))
            msg->failed = 1;
    }
    dec_error_done(&verr);
    tftap_buf_done(&mp);
    return rc;
}

/* Bytes as message.c renders them: private bytes (size and hash: nothing to
 * send back), embedded JSON, else base64. */
static int enc_bytes(struct menc *e, const ProtobufCMessageDescriptor *owner,
                     const ProtobufCFieldDescriptor *f, const sj_node *v, tftap_buf *b)
{
    if (dec_pb_is_private_field(f->name)) {
        if (v->kind == SJ_OBJECT)
            return 0;
    } else if (dec_pb_is_json_bytes(owner, f->name)) {
        /* Bytes that did not parse as JSON render as a string, as a JSON
         * string does: stored state is an object, so a string there was
         * text; a cty type JSON string ("string") was JSON. */
        if (v->kind == SJ_STRING && dec_pb_is_raw_state(owner))
            tftap_buf_append(b, v->str, v->len);
        else if (v->kind != SJ_NULL)
            sj_write(v, b);
        return 0;
    }
    if (v->kind != SJ_STRING || base64_decode(v->str, v->len, b))
        return mfail(e, TFTAP_EDECODE, "base64 bytes are required");
    return 0;
}

static int double_node(struct menc *e, const sj_node *v, double *out)
{
    if (v->kind == SJ_STRING) {
        if (strcmp(v->str, "NaN") == 0)
            *out = NAN;
        else if (strcmp(v->str, "Infinity") == 0)
            *out = INFINITY;
        else if (strcmp(v->str, "-Infinity") == 0)
            *out = -INFINITY;
        else
            return mfail(e, TFTAP_EDECODE, "a number is required");
        return 0;
    }
    if (v->kind != SJ_NUMBER)
        return mfail(e, TFTAP_EDECODE, "a number is required");
    *out = strtod(v->str, NULL);
    return 0;
}

/* One value of field f. packed: write no tag (inside a packed run).
 * force: write even a default value (present oneof members, map entries,
 * repeated elements). */
static int enc_field_value(struct menc *e, const ProtobufCMessageDescriptor *owner,
                           const ProtobufCFieldDescriptor *f, const sj_node *v, size_t index,
                           int force, int packed, tftap_buf *o)
{
    int64_t sv = 0;
    uint64_t uv = 0;
    int rc;
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        if ((rc = int_node(e, v, INT32_MIN, INT32_MAX, &sv, &uv)))
            return rc;
        break;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        if ((rc = int_node(e, v, 0, UINT32_MAX, &sv, &uv)))
            return rc;
        break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        if ((rc = int_node(e, v, INT64_MIN, INT64_MAX, &sv, &uv)))
            return rc;
        break;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        if ((rc = int_node(e, v, 0, UINT64_MAX, &sv, &uv)))
            return rc;
        break;
    case PROTOBUF_C_TYPE_ENUM:
        if (v->kind == SJ_STRING) {
            const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value_by_name(
                (const ProtobufCEnumDescriptor *)f->descriptor, v->str);
            if (!ev)
                return mfail(e, TFTAP_EDECODE, "unknown enum value");
            sv = ev->value;
        } else if ((rc = int_node(e, v, INT32_MIN, INT32_MAX, &sv, &uv))) {
            return rc;
        }
        break;
    case PROTOBUF_C_TYPE_BOOL:
        if (v->kind != SJ_BOOL)
            return mfail(e, TFTAP_EDECODE, "a bool is required");
        sv = v->boolean;
        break;
    default:
        break;
    }
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_ENUM:
    case PROTOBUF_C_TYPE_BOOL:
        if (!force && sv == 0)
            return 0;
        if (!packed)
            pb_tag(o, f->id, 0);
        pb_varint(o, (uint64_t)sv); /* negative int32 too: ten bytes, as Go writes them */
        return 0;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_UINT64:
        if (!force && uv == 0)
            return 0;
        if (!packed)
            pb_tag(o, f->id, 0);
        pb_varint(o, uv);
        return 0;
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SINT64:
        if (!force && sv == 0)
            return 0;
        if (!packed)
            pb_tag(o, f->id, 0);
        pb_varint(o, ((uint64_t)sv << 1) ^ (uint64_t)(sv >> 63));
        return 0;
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FIXED32:
        if (!force && uv == 0)
            return 0;
        if (!packed)
            pb_tag(o, f->id, 5);
        pb_le(o, (uint64_t)sv, 4);
        return 0;
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
        if (!force && uv == 0)
            return 0;
        if (!packed)
            pb_tag(o, f->id, 1);
        pb_le(o, f->type == PROTOBUF_C_TYPE_FIXED64 ? uv : (uint64_t)sv, 8);
        return 0;
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_DOUBLE: {
        double dv;
        if ((rc = double_node(e, v, &dv)))
            return rc;
        if (!force && dv == 0 && !signbit(dv))
            return 0;
        if (f->type == PROTOBUF_C_TYPE_FLOAT) {
            float fv = (float)dv;
            uint32_t u;
            memcpy(&u, &fv, sizeof u);
            if (!packed)
                pb_tag(o, f->id, 5);
            pb_le(o, u, 4);
        } else {
            uint64_t u;
            memcpy(&u, &dv, sizeof u);
            if (!packed)
                pb_tag(o, f->id, 1);
            pb_le(o, u, 8);
        }
        return 0;
    }
    case PROTOBUF_C_TYPE_STRING:
        if (v->kind != SJ_STRING)
            return mfail(e, TFTAP_EDECODE, "a string is required");
        if (!dec_utf8_valid(v->str, v->len))
            return mfail(e, TFTAP_EDECODE, "string is not valid utf-8"); /* proto3 requires it */
        if (force || v->len)
            pb_len(o, f->id, v->str, v->len);
        return 0;
    case PROTOBUF_C_TYPE_BYTES: {
        tftap_buf b = TFTAP_BUF_INIT;
        rc = enc_bytes(e, owner, f, v, &b);
        if (!rc && (force || b.len))
            pb_len(o, f->id, b.data, b.len);
        if (tftap_buf_failed(&b))
            o->failed = 1;
        tftap_buf_done(&b);
        return rc;
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessageDescriptor *sd = f->descriptor;
        tftap_buf b = TFTAP_BUF_INIT;
        if (dec_pb_is_dynamic_value(sd))
            rc = enc_dynamic(e, f, v, index, &b);
        else if (v->kind == SJ_NULL)
            rc = 0; /* an absent message */
        else
            rc = enc_message(e, sd, v, &b);
        if (!rc && (v->kind != SJ_NULL || b.len || force))
            pb_len(o, f->id, b.data, b.len);
        if (tftap_buf_failed(&b))
            o->failed = 1;
        tftap_buf_done(&b);
        return rc;
    }
    }
    return mfail(e, TFTAP_EDECODE, "unsupported field type");
}

static int is_packable(const ProtobufCFieldDescriptor *f)
{
    return f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_BYTES &&
           f->type != PROTOBUF_C_TYPE_MESSAGE;
}

/* A map field: each member an entry message with key (1) and value (2),
 * both always written, as Go writes map entries. */
static int enc_map(struct menc *e, const ProtobufCFieldDescriptor *f, const sj_node *v,
                   tftap_buf *o)
{
    if (v->kind != SJ_OBJECT)
        return mfail(e, TFTAP_EDECODE, "an object is required");
    const ProtobufCMessageDescriptor *ed = f->descriptor;
    const ProtobufCFieldDescriptor *kf = &ed->fields[0], *vf = &ed->fields[1];
    size_t i = 0;
    for (const sj_node *m = v->child; m; m = m->next, i++) {
        size_t mark = e->path.len;
        path_key(e, m->key, m->key_len);
        /* The key as a node of its own kind: rendered keys are strings. */
        sj_node key = {0};
        key.kind = kf->type == PROTOBUF_C_TYPE_STRING ? SJ_STRING
                   : kf->type == PROTOBUF_C_TYPE_BOOL ? SJ_BOOL
                                                      : SJ_NUMBER;
        key.str = m->key;
        key.len = m->key_len;
        key.boolean = m->key_len == 4 && memcmp(m->key, "true", 4) == 0;
        tftap_buf entry = TFTAP_BUF_INIT;
        int rc = enc_field_value(e, ed, kf, &key, i, 1, 0, &entry);
        if (!rc)
            rc = enc_field_value(e, ed, vf, m, i, 1, 0, &entry);
        if (!rc)
            pb_len(o, f->id, entry.data, entry.len);
        if (tftap_buf_failed(&entry))
            o->failed = 1;
        tftap_buf_done(&entry);
        if (rc)
            return rc;
        path_pop(e, mark);
    }
    return 0;
}

static int enc_field(struct menc *e, const ProtobufCMessageDescriptor *d,
                     const ProtobufCFieldDescriptor *f, const sj_node *v, tftap_buf *o)
{
    if (f->label != PROTOBUF_C_LABEL_REPEATED) {
        if (v->kind == SJ_NULL && !dec_pb_is_dynamic_value(f->descriptor))
            return 0;
        int force =
            f->label == PROTOBUF_C_LABEL_OPTIONAL || (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF);
        return enc_field_value(e, d, f, v, 0, force, 0, o);
    }
    if (f->type == PROTOBUF_C_TYPE_MESSAGE && dec_pb_is_map_entry(f->descriptor))
        return enc_map(e, f, v, o);
    if (v->kind == SJ_NULL)
        return 0;
    if (v->kind != SJ_ARRAY)
        return mfail(e, TFTAP_EDECODE, "an array is required");
    int packed = is_packable(f);
    tftap_buf run = TFTAP_BUF_INIT;
    tftap_buf *dst = packed ? &run : o;
    size_t i = 0;
    int rc = 0;
    for (const sj_node *x = v->child; x && !rc; x = x->next, i++) {
        size_t mark = e->path.len;
        path_index(e, i);
        rc = enc_field_value(e, d, f, x, i, 1, packed, dst);
        if (!rc)
            path_pop(e, mark);
    }
    if (!rc && packed && run.len)
        pb_len(o, f->id, run.data, run.len);
    if (tftap_buf_failed(&run))
        o->failed = 1;
    tftap_buf_done(&run);
    return rc;
}

/* AttributePath text (`.a["k"][3]`) back to steps: `.name` an attribute,
 * `["k"]` a string key, `[n]` an integer key. */
static int enc_path_text(struct menc *e, const ProtobufCMessageDescriptor *d, const char *s,
                         tftap_buf *o)
{
    const ProtobufCFieldDescriptor *sf =
        protobuf_c_message_descriptor_get_field_by_name(d, "steps");
    const ProtobufCMessageDescriptor *sd = sf->descriptor;
    const ProtobufCFieldDescriptor *fa =
        protobuf_c_message_descriptor_get_field_by_name(sd, "attribute_name");
    const ProtobufCFieldDescriptor *fs =
        protobuf_c_message_descriptor_get_field_by_name(sd, "element_key_string");
    const ProtobufCFieldDescriptor *fi =
        protobuf_c_message_descriptor_get_field_by_name(sd, "element_key_int");
    if (!dec_utf8_valid(s, strlen(s)))
        return mfail(e, TFTAP_EDECODE, "path is not valid utf-8");
    tftap_buf step = TFTAP_BUF_INIT;
    int rc = 0;
    const char *p = s;
    while (*p && !rc) {
        tftap_buf_reset(&step);
        if (*p == '.' && p[1] != '[') {
            const char *start = ++p;
            while (*p && *p != '.' && *p != '[')
                p++;
            if (p == start)
                rc = mfail(e, TFTAP_EDECODE, "empty attribute name in path");
            else
                pb_len(&step, fa->id, start, (size_t)(p - start));
        } else if (*p == '.') {
            p++;
            continue;
        } else if (*p == '[' && p[1] == '"') {
            /* The JSON string runs to the first unescaped quote. */
            const char *q = p + 2;
            while (*q && *q != '"')
                q += *q == '\\' && q[1] ? 2 : 1;
            sj_doc *kd = NULL;
            if (*q != '"' || q[1] != ']' || sj_parse(p + 1, (size_t)(q + 1 - (p + 1)), 1, &kd)) {
                rc = mfail(e, TFTAP_EDECODE, "bad key in path");
            } else {
                const sj_node *k = sj_root(kd);
                pb_len(&step, fs->id, k->str, k->len);
                p = q + 2;
            }
            sj_free(kd);
        } else if (*p == '[') {
            char *end;
            const char *q = p + 1;
            long long v = strtoll(q, &end, 10);
            if (end == q || *end != ']' || (*q != '-' && (*q < '0' || *q > '9')))
                rc = mfail(e, TFTAP_EDECODE, "bad index in path");
            else {
                pb_tag(&step, fi->id, 0);
                pb_varint(&step, (uint64_t)v);
                p = end + 1;
            }
        } else {
            rc = mfail(e, TFTAP_EDECODE, "bad path");
        }
        if (!rc)
            pb_len(o, sf->id, step.data, step.len);
    }
    if (tftap_buf_failed(&step))
        o->failed = 1;
    tftap_buf_done(&step);
    return rc;
}

static int enc_message(struct menc *e, const ProtobufCMessageDescriptor *d, const sj_node *obj,
                       tftap_buf *out)
{
    if (obj->kind != SJ_OBJECT)
        return mfail(e, TFTAP_EDECODE, "an object is required");
    if (e->depth >= e->max_depth)
        return mfail(e, TFTAP_ELIMIT, "nesting deeper than %u levels", e->max_depth);
    e->depth++;
    const sj_node **by_field = d->n_fields ? calloc(d->n_fields, sizeof *by_field) : NULL;
    if (d->n_fields && !by_field) {
        e->depth--;
        return mfail(e, TFTAP_ENOMEM, "out of memory");
    }
    /* A nested message naming its own resource type decodes its values
     * with that type's schema, as in the renderer. */
    const char *saved_type = e->c.type_name;
    const ProtobufCFieldDescriptor *tf =
        protobuf_c_message_descriptor_get_field_by_name(d, "type_name");
    const sj_node *own = tf && tf->type == PROTOBUF_C_TYPE_STRING ? sj_get(obj, "type_name") : NULL;
    if (own && own->kind == SJ_STRING && own->len && strlen(own->str) == own->len)
        e->c.type_name = own->str;
    const sj_node *path_text = NULL;
    int rc = 0;
    for (const sj_node *m = obj->child; m && !rc; m = m->next) {
        if (strcmp(m->key, "$unknown_fields") == 0)
            continue; /* their bytes are gone */
        if (dec_pb_is_attribute_path(d) && strcmp(m->key, "path") == 0) {
            path_text = m;
            continue;
        }
        const ProtobufCFieldDescriptor *f =
            strlen(m->key) == m->key_len
                ? protobuf_c_message_descriptor_get_field_by_name(d, m->key)
                : NULL;
        size_t mark = e->path.len;
        path_field(e, m->key);
        if (!f)
            rc = mfail(e, TFTAP_EDECODE, "unknown field");
        else if (by_field[f - d->fields])
            rc = mfail(e, TFTAP_EDECODE, "duplicate field");
        else {
            by_field[f - d->fields] = m;
            path_pop(e, mark);
        }
    }
    /* Steps say everything the text says; the text alone serves callers
     * that wrote only a path. */
    if (!rc && path_text) {
        const ProtobufCFieldDescriptor *sf =
            protobuf_c_message_descriptor_get_field_by_name(d, "steps");
        if (!by_field[sf - d->fields] || by_field[sf - d->fields]->kind == SJ_NULL) {
            size_t mark = e->path.len;
            path_field(e, "path");
            if (path_text->kind != SJ_STRING)
                rc = mfail(e, TFTAP_EDECODE, "a string is required");
            else
                rc = enc_path_text(e, d, path_text->str, out);
            if (!rc)
                path_pop(e, mark);
            by_field[sf - d->fields] = NULL;
        }
    }
    for (unsigned i = 0; i < d->n_fields && !rc; i++) {
        if (!by_field[i])
            continue;
        size_t mark = e->path.len;
        path_field(e, d->fields[i].name);
        rc = enc_field(e, d, &d->fields[i], by_field[i], out);
        if (!rc)
            path_pop(e, mark);
    }
    e->c.type_name = saved_type;
    free(by_field);
    e->depth--;
    return rc;
}

int dec_message_from_json(const char *method, int is_response, const char *type_name,
                          const char *json, size_t n, const dec_schema *schema,
                          const dec_limits *lim, tftap_buf *out, dec_error *err)
{
    struct dec_method m;
    if (!dec_method_find(method, &m)) {
        dec_error_set(err, TFTAP_ENOTFOUND, "", "unknown method %s",
                      method && dec_utf8_valid(method, strlen(method)) ? method : "?");
        return TFTAP_ENOTFOUND;
    }
    sj_doc *doc = NULL;
    int rc = dec_encode_parse(json, n, lim, &doc, err);
    if (rc)
        return rc;
    const sj_node *root = sj_root(doc);
    struct menc e = {
        .c = {.schema = schema, .rule = dec_method_rule(&m), .type_name = type_name},
        .lim = lim,
        .max_depth = dec_limits_depth(lim),
        .err = err,
    };
    /* A request names its own type; the caller's name serves responses. */
    const ProtobufCFieldDescriptor *tf = is_response ? NULL : dec_method_type_name_field(&m);
    if (tf) {
        const sj_node *own = sj_get(root, tf->name);
        if (own && own->kind == SJ_STRING && own->len && strlen(own->str) == own->len)
            e.c.type_name = own->str;
    }
    if (e.c.rule == DEC_RULE_FUNCTION)
        e.c.fn = dec_schema_function(schema, e.c.type_name);
    size_t start = out->len;
    rc = enc_message(&e, is_response ? m.m->output : m.m->input, root, out);
    if (!rc && (tftap_buf_failed(out) || tftap_buf_failed(&e.path)))
        rc = mfail(&e, TFTAP_ENOMEM, "out of memory");
    if (rc && !tftap_buf_failed(out)) {
        out->len = start;
        if (out->data)
            out->data[start] = '\0';
    }
    dec_value_ctx_done(&e.c);
    tftap_buf_done(&e.path);
    sj_free(doc);
    return rc;
}
