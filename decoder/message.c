/* decoder: plugin-protocol messages rendered as JSON.
 *
 * One generic walker over protobuf-c's descriptors renders any message of the
 * services we know; a few message types get a readable form (DynamicValue
 * decoded through the schema, AttributePath as a path string, RawState's
 * JSON embedded, provider-private bytes as size and hash). */
#include "decoder/decoder_int.h"
#include "decoder/message_int.h"
#include "decoder/pb_int.h"
#include "decoder/schema_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- JSON helpers -------------------------------------------------------- */

/* A protobuf string as a JSON string; bytes that are not UTF-8 (protobuf-c
 * does not check) become U+FFFD rather than invalid output. */
static void put_string(tftap_buf *out, const char *s, size_t n)
{
    if (dec_utf8_valid(s, n)) {
        tftap_buf_json_string(out, s, n);
        return;
    }
    tftap_buf clean = TFTAP_BUF_INIT;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t need = c < 0x80                 ? 1
                      : c >= 0xc2 && c <= 0xdf ? 2
                      : c >= 0xe0 && c <= 0xef ? 3
                      : c >= 0xf0 && c <= 0xf4 ? 4
                                               : 0;
        if (need && need <= n - i && dec_utf8_valid(s + i, need)) {
            tftap_buf_append(&clean, s + i, need);
            i += need;
        } else {
            tftap_buf_append(&clean, "\xef\xbf\xbd", 3);
            i++;
        }
    }
    if (tftap_buf_failed(&clean))
        out->failed = 1;
    else
        tftap_buf_json_string(out, clean.data ? clean.data : "", clean.len);
    tftap_buf_done(&clean);
}

static void put_cstring(tftap_buf *out, const char *s)
{
    put_string(out, s ? s : "", s ? strlen(s) : 0);
}

static void put_base64(tftap_buf *out, const uint8_t *p, size_t n)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (n > (SIZE_MAX - 3) / 4 * 3 || tftap_buf_reserve(out, (n + 2) / 3 * 4 + 3)) {
        out->failed = 1;
        return;
    }
    char *o = out->data + out->len;
    *o++ = '"';
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        *o++ = tbl[v >> 18];
        *o++ = tbl[(v >> 12) & 63];
        *o++ = tbl[(v >> 6) & 63];
        *o++ = tbl[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)p[i] << 16;
        *o++ = tbl[v >> 18];
        *o++ = tbl[(v >> 12) & 63];
        *o++ = '=';
        *o++ = '=';
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
        *o++ = tbl[v >> 18];
        *o++ = tbl[(v >> 12) & 63];
        *o++ = tbl[(v >> 6) & 63];
        *o++ = '=';
    }
    *o++ = '"';
    *o = '\0';
    out->len = (size_t)(o - out->data);
}

/* {"size": N, "sha256": "<hex>"} for bytes we describe rather than show. */
static void put_digest(tftap_buf *out, const uint8_t *p, size_t n)
{
    /* Private fields are often empty: their digest is a constant. By hand
     * otherwise: printf costs as much as the digest of a short field. */
    char hex[65] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    if (n)
        tftap_sha256_hex(p, n, hex);
    char num[21];
    size_t i = sizeof num;
    size_t v = n;
    do {
        num[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    tftap_buf_puts(out, "{\"size\":");
    tftap_buf_append(out, num + i, sizeof num - i);
    tftap_buf_puts(out, ",\"sha256\":\"");
    tftap_buf_append(out, hex, 64);
    tftap_buf_puts(out, "\"}");
}

/* Copy one JSON text compactly (whitespace dropped, tokens verbatim so
 * numbers keep their exact digits) after checking it strictly; on invalid
 * input nothing is appended and -1 returned. */
struct jcopy {
    const char *p, *end;
    tftap_buf *out;
    unsigned depth, max_depth;
};

static void jws(struct jcopy *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static int jhex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int jstring(struct jcopy *j)
{
    const char *start = j->p++;
    while (j->p < j->end && *j->p != '"') {
        unsigned char c = (unsigned char)*j->p;
        if (c < 0x20)
            return -1;
        if (c == '\\') {
            if (j->end - j->p < 2)
                return -1;
            char e = j->p[1];
            if (e == 'u') {
                if (j->end - j->p < 6 || !jhex(j->p[2]) || !jhex(j->p[3]) || !jhex(j->p[4]) ||
                    !jhex(j->p[5]))
                    return -1;
                j->p += 6;
            } else if (e && strchr("\"\\/bfnrt", e)) {
                j->p += 2;
            } else {
                return -1;
            }
            continue;
        }
        j->p++;
    }
    if (j->p >= j->end)
        return -1;
    j->p++;
    if (!dec_utf8_valid(start, (size_t)(j->p - start)))
        return -1;
    tftap_buf_append(j->out, start, (size_t)(j->p - start));
    return 0;
}

static int jvalue(struct jcopy *j)
{
    jws(j);
    if (j->p >= j->end)
        return -1;
    char c = *j->p;
    if (c == '"')
        return jstring(j);
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        if (++j->depth > j->max_depth)
            return -1;
        tftap_buf_putc(j->out, c);
        j->p++;
        jws(j);
        if (j->p < j->end && *j->p == close) {
            j->p++;
            tftap_buf_putc(j->out, close);
            j->depth--;
            return 0;
        }
        for (;;) {
            if (c == '{') {
                jws(j);
                if (j->p >= j->end || *j->p != '"' || jstring(j))
                    return -1;
                jws(j);
                if (j->p >= j->end || *j->p != ':')
                    return -1;
                j->p++;
                tftap_buf_putc(j->out, ':');
            }
            if (jvalue(j))
                return -1;
            jws(j);
            if (j->p >= j->end)
                return -1;
            if (*j->p == ',') {
                j->p++;
                tftap_buf_putc(j->out, ',');
                continue;
            }
            if (*j->p != close)
                return -1;
            j->p++;
            tftap_buf_putc(j->out, close);
            j->depth--;
            return 0;
        }
    }
    static const char *const words[] = {"true", "false", "null"};
    for (size_t i = 0; i < 3; i++) {
        size_t wl = strlen(words[i]);
        if ((size_t)(j->end - j->p) >= wl && memcmp(j->p, words[i], wl) == 0) {
            tftap_buf_append(j->out, j->p, wl);
            j->p += wl;
            return 0;
        }
    }
    const char *start = j->p;
    while (j->p < j->end && *j->p && strchr("+-0123456789.eE", *j->p))
        j->p++;
    if (j->p == start || !dec_json_number_valid(start, (size_t)(j->p - start)))
        return -1;
    tftap_buf_append(j->out, start, (size_t)(j->p - start));
    return 0;
}

static int put_json_copy(tftap_buf *out, const uint8_t *p, size_t n, unsigned max_depth)
{
    size_t mark = out->len;
    struct jcopy j = {(const char *)p, (const char *)p + n, out, 0, max_depth};
    int rc = jvalue(&j);
    if (!rc) {
        jws(&j);
        if (j.p != j.end)
            rc = -1;
    }
    if (rc && !tftap_buf_failed(out)) {
        out->len = mark;
        if (out->data)
            out->data[mark] = '\0';
    }
    return rc;
}

/* ---- the memo of rendered DynamicValues ------------------------------------ */

struct memo_entry {
    struct memo_entry *next;
    const dec_type *t;
    int is_json; /* the value came as JSON, not msgpack */
    size_t n, json_len;
    unsigned char *bytes; /* n value bytes, then json_len bytes of JSON */
};

struct dec_memo {
    struct memo_entry *head;
    size_t bytes;
};

dec_memo *dec_memo_new(void)
{
    return calloc(1, sizeof(dec_memo));
}

void dec_memo_clear(dec_memo *m)
{
    if (!m)
        return;
    while (m->head) {
        struct memo_entry *e = m->head;
        m->head = e->next;
        free(e->bytes);
        free(e);
    }
    m->bytes = 0;
}

void dec_memo_free(dec_memo *m)
{
    dec_memo_clear(m);
    free(m);
}

static const struct memo_entry *memo_find(const dec_memo *m, const dec_type *t, int is_json,
                                          const uint8_t *p, size_t n)
{
    for (const struct memo_entry *e = m->head; e; e = e->next)
        if (e->t == t && e->is_json == is_json && e->n == n && memcmp(e->bytes, p, n) == 0)
            return e;
    return NULL;
}

/* Remember json/json_len as the rendering of p/n (within the bound; the
 * newest first, since a call's values repeat the ones just before). */
static void memo_add(dec_memo *m, const dec_type *t, int is_json, const uint8_t *p, size_t n,
                     const char *json, size_t json_len)
{
    size_t need = n + json_len;
    if (need > DEC_MEMO_MAX_BYTES || need < n)
        return;
    if (m->bytes + need > DEC_MEMO_MAX_BYTES)
        dec_memo_clear(m);
    struct memo_entry *e = malloc(sizeof *e);
    unsigned char *b = malloc(need ? need : 1);
    if (!e || !b) {
        free(e);
        free(b);
        return;
    }
    memcpy(b, p, n);
    memcpy(b + n, json, json_len);
    *e = (struct memo_entry){m->head, t, is_json, n, json_len, b};
    m->head = e;
    m->bytes += need;
}

/* ---- rendering --------------------------------------------------------------- */

static int render_dynamic(struct dec_render *r, const ProtobufCMessage *dv, const char *field,
                          size_t index)
{
    size_t mn = 0, jn = 0;
    const uint8_t *mp = NULL, *jp = NULL;
    const dec_pb_hole *hole = NULL;
    for (size_t i = 0; i < r->nholes && !hole; i++)
        if (r->holes[i].stub == dv)
            hole = &r->holes[i];
    if (hole) {
        /* Read in place (the unpacked message holds an empty one). */
        const ProtobufCFieldDescriptor *fm =
            protobuf_c_message_descriptor_get_field_by_name(dv->descriptor, "msgpack");
        const ProtobufCFieldDescriptor *fj =
            protobuf_c_message_descriptor_get_field_by_name(dv->descriptor, "json");
        const void *v;
        if (fm && dec_pb_scan_bytes(hole->p, hole->n, fm->id, &v, &mn) == 1)
            mp = v;
        if (fj && dec_pb_scan_bytes(hole->p, hole->n, fj->id, &v, &jn) == 1)
            jp = v;
    } else {
        mp = dec_pb_bytes(dv, "msgpack", &mn);
        jp = dec_pb_bytes(dv, "json", &jn);
    }
    const uint8_t *payload = mn ? mp : jp;
    size_t size = mn ? mn : jn;
    if (size == 0) {
        tftap_buf_puts(r->out, "null");
        return 0;
    }
    const dec_type *t = dec_value_ctx_type(&r->c, field, index);
    if (!t) {
        tftap_buf_puts(r->out, "{\"$undecoded\":");
        put_digest(r->out, payload, size);
        tftap_buf_putc(r->out, '}');
        return 0;
    }
    /* Types made for this render (primitives) may share an address with
     * another render's: only the schema's are remembered. */
    dec_memo *memo = t != r->c.t_bool && t != r->c.t_number ? r->opts->memo : NULL;
    if (memo) {
        const struct memo_entry *m = memo_find(memo, t, mn == 0, payload, size);
        if (m) {
            tftap_buf_append(r->out, (const char *)m->bytes + m->n, m->json_len);
            return 0;
        }
    }
    size_t mark = r->out->len;
    dec_error e = DEC_ERROR_INIT;
    int rc = dec_dynamic_value_to_json(t, mp, mn, jp, jn, r->opts, r->out, &e);
    if (rc == 0 && memo && !tftap_buf_failed(r->out))
        memo_add(memo, t, mn == 0, payload, size, r->out->data + mark, r->out->len - mark);
    if (rc == TFTAP_ENOMEM) {
        dec_error_done(&e);
        return rc;
    }
    if (rc) {
        /* One bad value does not hide the rest of the message. */
        tftap_buf text = TFTAP_BUF_INIT;
        dec_error_format(&e, &text);
        tftap_buf_puts(r->out, "{\"$error\":");
        put_string(r->out, text.data ? text.data : "", text.len);
        tftap_buf_printf(r->out, ",\"size\":%zu}", size);
        tftap_buf_done(&text);
    }
    dec_error_done(&e);
    return 0;
}

/* AttributePath steps as `.name["key"][3]`. */
static void put_attribute_path(tftap_buf *out, const ProtobufCMessage *path)
{
    tftap_buf s = TFTAP_BUF_INIT;
    ProtobufCMessage *const *steps;
    size_t n = dec_pb_messages(path, "steps", &steps);
    for (size_t i = 0; i < n; i++) {
        const ProtobufCMessage *st = steps[i];
        if (dec_pb_present(st, dec_pb_field(st, "attribute_name"))) {
            const char *a = dec_pb_string(st, "attribute_name");
            int ident = a[0] != '\0' && !(a[0] >= '0' && a[0] <= '9');
            for (const char *c = a; *c && ident; c++)
                ident = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                        (*c >= '0' && *c <= '9') || *c == '_' || *c == '-';
            if (ident) {
                tftap_buf_putc(&s, '.');
                tftap_buf_puts(&s, a);
            } else {
                tftap_buf_putc(&s, '[');
                put_cstring(&s, a);
                tftap_buf_putc(&s, ']');
            }
        } else if (dec_pb_present(st, dec_pb_field(st, "element_key_string"))) {
            tftap_buf_putc(&s, '[');
            put_cstring(&s, dec_pb_string(st, "element_key_string"));
            tftap_buf_putc(&s, ']');
        } else if (dec_pb_present(st, dec_pb_field(st, "element_key_int"))) {
            tftap_buf_printf(&s, "[%lld]", (long long)dec_pb_int(st, "element_key_int"));
        } else {
            tftap_buf_puts(&s, "[?]"); /* a step of a kind newer than us */
        }
    }
    if (tftap_buf_failed(&s))
        out->failed = 1;
    else
        tftap_buf_json_string(out, s.data ? s.data : "", s.len);
    tftap_buf_done(&s);
}

static int render_message(struct dec_render *r, const ProtobufCMessage *m, const char *field,
                          size_t index);

static size_t elem_size(const ProtobufCFieldDescriptor *f)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_ENUM:
        return 4;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return 8;
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING:
        return sizeof(char *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(ProtobufCMessage *);
    }
    return 0;
}

static void put_double(tftap_buf *out, double v)
{
    if (isnan(v))
        tftap_buf_puts(out, "\"NaN\"");
    else if (isinf(v))
        tftap_buf_puts(out, v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    else
        tftap_buf_printf(out, "%.17g", v);
}

/* One value of field f stored at p (an element, for repeated fields). */
static int render_value(struct dec_render *r, const ProtobufCMessage *owner,
                        const ProtobufCFieldDescriptor *f, const void *p, size_t index)
{
    tftap_buf *out = r->out;
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32: {
        int32_t v;
        memcpy(&v, p, sizeof v);
        tftap_buf_printf(out, "%ld", (long)v);
        return 0;
    }
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: {
        uint32_t v;
        memcpy(&v, p, sizeof v);
        tftap_buf_printf(out, "%lu", (unsigned long)v);
        return 0;
    }
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64: {
        int64_t v;
        memcpy(&v, p, sizeof v);
        tftap_buf_printf(out, "%lld", (long long)v);
        return 0;
    }
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: {
        uint64_t v;
        memcpy(&v, p, sizeof v);
        tftap_buf_printf(out, "%llu", (unsigned long long)v);
        return 0;
    }
    case PROTOBUF_C_TYPE_FLOAT: {
        float v;
        memcpy(&v, p, sizeof v);
        put_double(out, v);
        return 0;
    }
    case PROTOBUF_C_TYPE_DOUBLE: {
        double v;
        memcpy(&v, p, sizeof v);
        put_double(out, v);
        return 0;
    }
    case PROTOBUF_C_TYPE_BOOL: {
        protobuf_c_boolean v;
        memcpy(&v, p, sizeof v);
        tftap_buf_puts(out, v ? "true" : "false");
        return 0;
    }
    case PROTOBUF_C_TYPE_ENUM: {
        int32_t v;
        memcpy(&v, p, sizeof v);
        const ProtobufCEnumValue *ev =
            protobuf_c_enum_descriptor_get_value((const ProtobufCEnumDescriptor *)f->descriptor, v);
        if (ev)
            put_cstring(out, ev->name);
        else
            tftap_buf_printf(out, "%ld", (long)v); /* a value newer than us */
        return 0;
    }
    case PROTOBUF_C_TYPE_STRING: {
        const char *s;
        memcpy(&s, p, sizeof s);
        put_cstring(out, s);
        return 0;
    }
    case PROTOBUF_C_TYPE_BYTES: {
        ProtobufCBinaryData b;
        memcpy(&b, p, sizeof b);
        size_t n = b.data ? b.len : 0;
        if (dec_pb_is_private_field(f->name) ||
            (r->opts->redact && dec_pb_is_state_bytes(owner->descriptor, f->name))) {
            /* Kept as size and hash: private bytes are the provider's, and
             * a state chunk holds every secret of the state in clear. */
            put_digest(out, b.data, n);
        } else if (dec_pb_is_json_bytes(owner->descriptor, f->name)) {
            /* Embedded JSON (stored state, cty type JSON): shown as the
             * value it is, or as text when it does not parse. */
            if (n == 0)
                tftap_buf_puts(out, "null");
            else if (r->opts->redact && dec_pb_is_raw_state(owner->descriptor) &&
                     dec_raw_state_redacted(r, b.data, n) == 0)
                ; /* stored state holds the secrets in clear: redacted */
            else if (put_json_copy(out, b.data, n, r->max_depth))
                put_string(out, (const char *)b.data, n);
        } else {
            put_base64(out, b.data, n);
        }
        return 0;
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *sub;
        memcpy(&sub, p, sizeof sub);
        if (!sub) {
            tftap_buf_puts(out, "null");
            return 0;
        }
        if (dec_pb_is_dynamic_value(sub->descriptor))
            return render_dynamic(r, sub, f->name, index);
        return render_message(r, sub, f->name, index);
    }
    }
    tftap_buf_puts(out, "null");
    return 0;
}

/* A repeated map-entry field as an object keyed by the entries' keys. */
static int render_map(struct dec_render *r, const ProtobufCFieldDescriptor *f,
                      ProtobufCMessage *const *entries, size_t n)
{
    const ProtobufCMessageDescriptor *d = f->descriptor;
    const ProtobufCFieldDescriptor *kf = &d->fields[0], *vf = &d->fields[1];
    tftap_buf_putc(r->out, '{');
    for (size_t i = 0; i < n; i++) {
        const char *e = (const char *)entries[i];
        if (i)
            tftap_buf_putc(r->out, ',');
        if (kf->type == PROTOBUF_C_TYPE_STRING) {
            render_value(r, entries[i], kf, e + kf->offset, i);
        } else {
            /* JSON keys are strings: quote the rendered scalar. */
            tftap_buf key = TFTAP_BUF_INIT;
            tftap_buf *saved = r->out;
            r->out = &key;
            render_value(r, entries[i], kf, e + kf->offset, i);
            r->out = saved;
            if (tftap_buf_failed(&key))
                r->out->failed = 1;
            else
                put_string(r->out, key.data ? key.data : "", key.len);
            tftap_buf_done(&key);
        }
        tftap_buf_putc(r->out, ':');
        int rc = render_value(r, entries[i], vf, e + vf->offset, i);
        if (rc)
            return rc;
    }
    tftap_buf_putc(r->out, '}');
    return 0;
}

static int render_field(struct dec_render *r, const ProtobufCMessage *m,
                        const ProtobufCFieldDescriptor *f)
{
    const char *base = (const char *)m;
    if (f->label != PROTOBUF_C_LABEL_REPEATED) {
        if (!dec_pb_present(m, f) && f->label == PROTOBUF_C_LABEL_OPTIONAL) {
            tftap_buf_puts(r->out, "null");
            return 0;
        }
        return render_value(r, m, f, base + f->offset, 0);
    }
    size_t n;
    const char *items;
    memcpy(&n, base + f->quantifier_offset, sizeof n);
    memcpy(&items, base + f->offset, sizeof items);
    if (!items)
        n = 0;
    if (f->type == PROTOBUF_C_TYPE_MESSAGE && dec_pb_is_map_entry(f->descriptor))
        return render_map(r, f, (ProtobufCMessage *const *)(const void *)items, n);
    size_t size = elem_size(f);
    tftap_buf_putc(r->out, '[');
    for (size_t i = 0; i < n; i++) {
        if (i)
            tftap_buf_putc(r->out, ',');
        int rc = render_value(r, m, f, items + i * size, i);
        if (rc)
            return rc;
    }
    tftap_buf_putc(r->out, ']');
    return 0;
}

static int render_message(struct dec_render *r, const ProtobufCMessage *m, const char *field,
                          size_t index)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    tftap_buf *out = r->out;
    (void)field;
    (void)index;
    /* A nested message naming its own resource type (an imported resource)
     * decodes its values with that type's schema. */
    const char *saved_type = r->c.type_name;
    const char *own = dec_pb_string(m, "type_name");
    if (own[0])
        r->c.type_name = own;
    int rc = 0, first = 1;
    tftap_buf_putc(out, '{');
    if (dec_pb_is_attribute_path(d)) {
        tftap_buf_puts(out, "\"path\":");
        put_attribute_path(out, m);
        first = 0;
    }
    for (unsigned i = 0; i < d->n_fields && !rc; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) && !dec_pb_present(m, f))
            continue;
        if (!first)
            tftap_buf_putc(out, ',');
        first = 0;
        put_cstring(out, f->name);
        tftap_buf_putc(out, ':');
        rc = render_field(r, m, f);
    }
    if (!rc && m->n_unknown_fields) {
        /* Fields from a newer protocol: kept visible, not interpreted. */
        if (!first)
            tftap_buf_putc(out, ',');
        tftap_buf_puts(out, "\"$unknown_fields\":[");
        for (unsigned i = 0; i < m->n_unknown_fields; i++) {
            const ProtobufCMessageUnknownField *u = &m->unknown_fields[i];
            tftap_buf_printf(out, "%s{\"field\":%lu,\"wire_type\":%d,\"size\":%zu}", i ? "," : "",
                             (unsigned long)u->tag, (int)u->wire_type, u->len);
        }
        tftap_buf_putc(out, ']');
    }
    tftap_buf_putc(out, '}');
    r->c.type_name = saved_type;
    return rc;
}

int dec_message_to_json(const char *method, int is_response, const void *p, size_t n,
                        const dec_schema *schema, const char *type_name, const dec_opts *opts,
                        tftap_buf *out, dec_error *err)
{
    struct dec_method m;
    if (!dec_method_find(method, &m)) {
        dec_error_set(err, TFTAP_ENOTFOUND, "", "unknown method %s",
                      method && dec_utf8_valid(method, strlen(method)) ? method : "?");
        return TFTAP_ENOTFOUND;
    }
    static const dec_opts no_opts;
    if (!opts)
        opts = &no_opts;
    const ProtobufCMessageDescriptor *d = is_response ? m.m->output : m.m->input;
    ProtobufCMessage *msg = NULL;
    dec_pb_hole holes[DEC_PB_MAX_HOLES];
    size_t nholes = 0;
    /* Big messages keep their big values where they are (protobuf-c would
     * copy them): a plan of a 100 MiB value is not held twice more. */
    int rc = n >= DEC_HOLLOW_MESSAGE_MIN
                 ? dec_pb_unpack_hollow(d, p, n, &opts->limits, DEC_HOLLOW_VALUE_MIN,
                                        dec_pb_is_dynamic_value, holes, &nholes, &msg, err)
                 : dec_pb_unpack(d, p, n, &opts->limits, &msg, err);
    if (rc)
        return rc;
    struct dec_render r = {
        .out = out,
        .opts = opts,
        .max_depth = opts->limits.max_depth ? opts->limits.max_depth : DEC_DEFAULT_MAX_DEPTH,
        .c = {.schema = schema, .rule = dec_method_rule(&m), .type_name = type_name},
        .holes = holes,
        .nholes = nholes,
    };
    /* A request names its own type; the caller's name serves responses. */
    const ProtobufCFieldDescriptor *tf = is_response ? NULL : dec_method_type_name_field(&m);
    if (tf) {
        const char *own = dec_pb_string(msg, tf->name);
        if (own[0])
            r.c.type_name = own;
    }
    if (r.c.rule == DEC_RULE_FUNCTION)
        r.c.fn = dec_schema_function(schema, r.c.type_name);
    size_t start = out->len;
    rc = render_message(&r, msg, "", 0);
    if (!rc && tftap_buf_failed(out))
        rc = TFTAP_ENOMEM;
    if (rc) {
        dec_error_set(err, rc, "", "%s", rc == TFTAP_ENOMEM ? "out of memory" : "render failed");
        if (!tftap_buf_failed(out)) {
            out->len = start;
            if (out->data)
                out->data[start] = '\0';
        }
    }
    dec_value_ctx_done(&r.c);
    dec_pb_free(msg);
    return rc;
}
