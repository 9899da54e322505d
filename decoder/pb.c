/* decoder: bounded protobuf-c parsing and by-name field access. */
#include "decoder/decoder_int.h"
#include "decoder/pb_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- wire walking -------------------------------------------------------- */

enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2, WIRE_I32 = 5 };

static int read_varint(const uint8_t *p, size_t n, size_t *pos, uint64_t *v)
{
    uint64_t r = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (*pos >= n)
            return -1;
        uint8_t b = p[(*pos)++];
        if (shift < 64)
            r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return 0;
        }
    }
    return -1; /* more than ten bytes */
}

/* One field header and the extent of its value. */
struct wire_field {
    uint32_t number;
    unsigned type;
    size_t start, len; /* value bytes (for WIRE_LEN: the payload) */
};

/* Read the next field at *pos; 0, or a static reason on malformed input. */
static const char *next_field(const uint8_t *p, size_t n, size_t *pos, struct wire_field *f)
{
    uint64_t tag, v;
    if (read_varint(p, n, pos, &tag))
        return "truncated field tag";
    if ((tag >> 3) == 0 || (tag >> 3) > 0x1fffffff)
        return "invalid field number";
    f->number = (uint32_t)(tag >> 3);
    f->type = (unsigned)(tag & 7);
    switch (f->type) {
    case WIRE_VARINT:
        f->start = *pos;
        if (read_varint(p, n, pos, &v))
            return "truncated varint";
        f->len = *pos - f->start;
        return NULL;
    case WIRE_I64:
    case WIRE_I32:
        f->len = f->type == WIRE_I64 ? 8 : 4;
        if (n - *pos < f->len)
            return "truncated fixed-size field";
        f->start = *pos;
        *pos += f->len;
        return NULL;
    case WIRE_LEN:
        if (read_varint(p, n, pos, &v))
            return "truncated length";
        if (v > n - *pos)
            return "length runs past the end of the message";
        f->start = *pos;
        f->len = (size_t)v;
        *pos += f->len;
        return NULL;
    default:
        return "unsupported wire type";
    }
}

/* Walk a message of type d (NULL: opaque) checking well-formedness and the
 * nesting of known message fields; only recurses max levels deep. */
static int check_nesting(const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t n,
                         unsigned depth, unsigned max, dec_error *err)
{
    if (depth > max) {
        dec_error_set(err, TFTAP_ELIMIT, "", "protobuf messages nested deeper than %u levels", max);
        return TFTAP_ELIMIT;
    }
    size_t pos = 0;
    while (pos < n) {
        struct wire_field f;
        const char *why = next_field(p, n, &pos, &f);
        if (why) {
            dec_error_set(err, TFTAP_EDECODE, "", "malformed protobuf %s: %s",
                          d ? d->name : "message", why);
            return TFTAP_EDECODE;
        }
        if (f.type != WIRE_LEN || !d)
            continue;
        const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field(d, f.number);
        if (fd && fd->type == PROTOBUF_C_TYPE_MESSAGE) {
            int rc = check_nesting(fd->descriptor, p + f.start, f.len, depth + 1, max, err);
            if (rc)
                return rc;
        }
    }
    return 0;
}

int dec_pb_scan_bytes(const void *vp, size_t n, uint32_t field, const void **v, size_t *vn)
{
    const uint8_t *p = vp;
    size_t pos = 0;
    int found = 0;
    while (pos < n) {
        struct wire_field f;
        if (next_field(p, n, &pos, &f))
            return TFTAP_EDECODE;
        if (f.number == field && f.type == WIRE_LEN) {
            *v = p + f.start;
            *vn = f.len;
            found = 1;
        }
    }
    return found;
}

/* ---- bounded unpacking --------------------------------------------------- */

struct budget {
    size_t left;
    int exhausted; /* the budget ran out */
    int nomem;     /* malloc failed */
};

static void *budget_alloc(void *data, size_t size)
{
    struct budget *b = data;
    if (size > b->left) {
        b->exhausted = 1;
        return NULL;
    }
    void *p = malloc(size ? size : 1);
    if (!p) {
        b->nomem = 1;
        return NULL;
    }
    b->left -= size;
    return p;
}

static void budget_free(void *data, void *p)
{
    (void)data;
    free(p);
}

/* What a message is held to before protobuf-c sees it: its size, and a
 * walk bounding its nesting (protobuf-c recurses without a limit). */
static int check_message(const ProtobufCMessageDescriptor *d, const void *p, size_t n,
                         const dec_limits *lim, dec_error *err)
{
    size_t max_bytes = lim && lim->max_bytes ? lim->max_bytes : DEC_DEFAULT_MAX_BYTES;
    unsigned max_depth = lim && lim->max_depth ? lim->max_depth : DEC_DEFAULT_MAX_DEPTH;
    if (n > max_bytes) {
        dec_error_set(err, TFTAP_ELIMIT, "", "message of %zu bytes exceeds the limit of %zu", n,
                      max_bytes);
        return TFTAP_ELIMIT;
    }
    /* Every level of a schema block is two messages (NestedBlock, Block). */
    return check_nesting(d, p, n, 0, 2 * max_depth + 8, err);
}

/* protobuf-c's unpacking of bytes check_message passed. */
static int unpack_checked(const ProtobufCMessageDescriptor *d, const void *p, size_t n,
                          ProtobufCMessage **out, dec_error *err)
{
    /* Unpacked structs are larger than their encoding (an empty sub-message
     * is two bytes on the wire, a struct in memory); 32x covers real
     * messages with room to spare while bounding hostile ones. */
    struct budget b = {0, 0, 0};
    b.left = n > (SIZE_MAX - (1u << 20)) / 32 ? SIZE_MAX : n * 32 + (1u << 20);
    ProtobufCAllocator a = {budget_alloc, budget_free, &b};
    ProtobufCMessage *m = protobuf_c_message_unpack(d, &a, n, p);
    if (!m) {
        if (b.nomem) {
            dec_error_set(err, TFTAP_ENOMEM, "", "out of memory unpacking %s", d->name);
            return TFTAP_ENOMEM;
        }
        if (b.exhausted) {
            dec_error_set(err, TFTAP_ELIMIT, "", "%s of %zu bytes expands past its memory budget",
                          d->name, n);
            return TFTAP_ELIMIT;
        }
        dec_error_set(err, TFTAP_EDECODE, "", "invalid protobuf %s", d->name);
        return TFTAP_EDECODE;
    }
    *out = m;
    return 0;
}

int dec_pb_unpack(const ProtobufCMessageDescriptor *d, const void *p, size_t n,
                  const dec_limits *lim, ProtobufCMessage **out, dec_error *err)
{
    *out = NULL;
    int rc = check_message(d, p, n, lim, err);
    return rc ? rc : unpack_checked(d, p, n, out, err);
}

/* The encoding of a varint (at most ten bytes) into out; its length. */
static size_t put_varint(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

int dec_pb_unpack_hollow(const ProtobufCMessageDescriptor *d, const void *vp, size_t n,
                         const dec_limits *lim, size_t min,
                         int (*hollow)(const ProtobufCMessageDescriptor *), dec_pb_hole *holes,
                         size_t *nholes, ProtobufCMessage **out, dec_error *err)
{
    const uint8_t *p = vp;
    *out = NULL;
    *nholes = 0;
    int rc = check_message(d, p, n, lim, err);
    if (rc)
        return rc;
    /* The candidates: big fields of a hollow type that occur once (a field
     * that occurs twice is merged by protobuf, which only unpacking does). */
    size_t pos = 0, found = 0;
    while (pos < n) {
        struct wire_field f;
        (void)next_field(p, n, &pos, &f); /* well-formed: checked above */
        if (f.type != WIRE_LEN)
            continue;
        size_t i;
        for (i = 0; i < found; i++)
            if (holes[i].number == f.number)
                break;
        if (i < found) {
            holes[i].n = 0; /* twice: unpacked as usual */
            continue;
        }
        const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field(d, f.number);
        if (f.len < min || !fd || fd->type != PROTOBUF_C_TYPE_MESSAGE ||
            fd->label == PROTOBUF_C_LABEL_REPEATED || !hollow(fd->descriptor) ||
            found == DEC_PB_MAX_HOLES)
            continue;
        holes[found++] = (dec_pb_hole){f.number, p + f.start, f.len, NULL};
    }
    size_t kept = 0;
    for (size_t i = 0; i < found; i++)
        if (holes[i].n > 0)
            holes[kept++] = holes[i];
    if (kept == 0)
        return unpack_checked(d, p, n, out, err); /* checked above: not walked again */
    /* A copy without the holes' bytes: each is an empty message there. */
    size_t cap = n;
    for (size_t i = 0; i < kept; i++)
        cap -= holes[i].n;
    uint8_t *copy = malloc(cap + 1);
    if (!copy) {
        dec_error_set(err, TFTAP_ENOMEM, "", "out of memory unpacking %s", d->name);
        return TFTAP_ENOMEM;
    }
    size_t len = 0;
    pos = 0;
    while (pos < n) {
        size_t at = pos;
        struct wire_field f;
        (void)next_field(p, n, &pos, &f);
        int hole = 0;
        for (size_t i = 0; i < kept && !hole; i++)
            hole = f.type == WIRE_LEN && holes[i].number == f.number;
        if (hole) {
            /* Its tag, then length 0: never longer than what it replaces. */
            len += put_varint(copy + len, ((uint64_t)f.number << 3) | WIRE_LEN);
            copy[len++] = 0;
        } else {
            memcpy(copy + len, p + at, pos - at);
            len += pos - at;
        }
    }
    /* The checked message with empty messages for some: no deeper, no larger. */
    rc = unpack_checked(d, copy, len, out, err);
    free(copy);
    if (rc)
        return rc;
    for (size_t i = 0; i < kept; i++) {
        const ProtobufCFieldDescriptor *fd =
            protobuf_c_message_descriptor_get_field(d, holes[i].number);
        holes[i].stub = *(ProtobufCMessage *const *)((const char *)*out + fd->offset);
    }
    *nholes = kept;
    return 0;
}

void dec_pb_free(ProtobufCMessage *m)
{
    if (m)
        protobuf_c_message_free_unpacked(m, NULL);
}

/* ---- by-name access ------------------------------------------------------ */

const ProtobufCFieldDescriptor *dec_pb_field(const ProtobufCMessage *m, const char *name)
{
    if (!m)
        return NULL;
    return protobuf_c_message_descriptor_get_field_by_name(m->descriptor, name);
}

static const void *member(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    return (const char *)m + f->offset;
}

int dec_pb_present(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    if (!m || !f)
        return 0;
    if (f->label == PROTOBUF_C_LABEL_REPEATED)
        return 1;
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
        uint32_t c;
        memcpy(&c, (const char *)m + f->quantifier_offset, sizeof c);
        return c == f->id;
    }
    if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
        const ProtobufCMessage *sub;
        memcpy(&sub, member(m, f), sizeof sub);
        return sub != NULL;
    }
    if (f->label == PROTOBUF_C_LABEL_OPTIONAL) {
        if (f->type == PROTOBUF_C_TYPE_STRING) {
            const char *s;
            memcpy(&s, member(m, f), sizeof s);
            return s != NULL;
        }
        protobuf_c_boolean has;
        memcpy(&has, (const char *)m + f->quantifier_offset, sizeof has);
        return has != 0;
    }
    return 1;
}

static const ProtobufCFieldDescriptor *single(const ProtobufCMessage *m, const char *name,
                                              ProtobufCType type)
{
    const ProtobufCFieldDescriptor *f = dec_pb_field(m, name);
    if (!f || f->label == PROTOBUF_C_LABEL_REPEATED || f->type != type || !dec_pb_present(m, f))
        return NULL;
    return f;
}

const char *dec_pb_string(const ProtobufCMessage *m, const char *name)
{
    const ProtobufCFieldDescriptor *f = single(m, name, PROTOBUF_C_TYPE_STRING);
    const char *s = NULL;
    if (f)
        memcpy(&s, member(m, f), sizeof s);
    return s ? s : "";
}

int dec_pb_bool(const ProtobufCMessage *m, const char *name)
{
    const ProtobufCFieldDescriptor *f = single(m, name, PROTOBUF_C_TYPE_BOOL);
    protobuf_c_boolean v = 0;
    if (f)
        memcpy(&v, member(m, f), sizeof v);
    return v != 0;
}

int64_t dec_pb_int(const ProtobufCMessage *m, const char *name)
{
    const ProtobufCFieldDescriptor *f = dec_pb_field(m, name);
    if (!f || f->label == PROTOBUF_C_LABEL_REPEATED || !dec_pb_present(m, f))
        return 0;
    const void *p = member(m, f);
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_ENUM: {
        int32_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: {
        uint32_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: {
        int64_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    default:
        return 0;
    }
}

const uint8_t *dec_pb_bytes(const ProtobufCMessage *m, const char *name, size_t *len)
{
    const ProtobufCFieldDescriptor *f = single(m, name, PROTOBUF_C_TYPE_BYTES);
    ProtobufCBinaryData b = {0, NULL};
    if (f)
        memcpy(&b, member(m, f), sizeof b);
    *len = b.data ? b.len : 0;
    return b.data;
}

const ProtobufCMessage *dec_pb_message(const ProtobufCMessage *m, const char *name)
{
    const ProtobufCFieldDescriptor *f = single(m, name, PROTOBUF_C_TYPE_MESSAGE);
    const ProtobufCMessage *sub = NULL;
    if (f)
        memcpy(&sub, member(m, f), sizeof sub);
    return sub;
}

size_t dec_pb_messages(const ProtobufCMessage *m, const char *name, ProtobufCMessage *const **items)
{
    const ProtobufCFieldDescriptor *f = dec_pb_field(m, name);
    *items = NULL;
    if (!f || f->label != PROTOBUF_C_LABEL_REPEATED || f->type != PROTOBUF_C_TYPE_MESSAGE)
        return 0;
    size_t n;
    memcpy(&n, (const char *)m + f->quantifier_offset, sizeof n);
    memcpy(items, member(m, f), sizeof *items);
    return *items ? n : 0;
}

int dec_pb_is_map_entry(const ProtobufCMessageDescriptor *d)
{
    size_t nl = strlen(d->name);
    return d->n_fields == 2 && nl > 5 && strcmp(d->name + nl - 5, "Entry") == 0 &&
           d->fields[0].id == 1 && strcmp(d->fields[0].name, "key") == 0 && d->fields[1].id == 2 &&
           strcmp(d->fields[1].name, "value") == 0;
}
