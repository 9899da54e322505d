/* decoder: provider schemas, each block turned into the cty object type it
 * implies (the type its DynamicValues are encoded with), from a
 * GetProviderSchema response or from `tofu providers schema -json`. */
#include "decoder/decoder_int.h"
#include "decoder/schema_int.h"
#include "decoder/pb_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfplugin5.pb-c.h"
#include "tfplugin6.pb-c.h"

#define NKINDS ((size_t)DEC_SCHEMA_STATE_STORE + 1)

/* Nesting modes, numbered as in both protocols' NestingMode enums. */
enum { NEST_INVALID, NEST_SINGLE, NEST_LIST, NEST_SET, NEST_MAP, NEST_GROUP };

struct entry {
    char *name;
    dec_type *type;
    size_t seq; /* definition order: a later definition of a name wins */
};

struct table {
    struct entry *v;
    size_t n, cap;
};

struct dec_schema {
    dec_limits lim;
    size_t seq;
    struct table t[NKINDS];  /* provider and provider_meta: one entry named "" */
    struct dec_function *fn; /* sorted by name once built */
    size_t nfn, fncap;
};

/* ---- tables ----------------------------------------------------------------- */

static int entry_cmp(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 8;
    if (ncap > SIZE_MAX / size)
        return TFTAP_ENOMEM;
    void *nv = realloc(*v, ncap * size);
    if (!nv)
        return TFTAP_ENOMEM;
    *v = nv;
    *cap = ncap;
    return 0;
}

/* Add (name, t); takes t, also on failure. */
static int table_add(dec_schema *s, enum dec_schema_kind kind, const char *name, dec_type *t)
{
    struct table *tb = &s->t[kind];
    char *copy = strdup(name);
    if (!copy || grow((void **)&tb->v, &tb->cap, tb->n, sizeof *tb->v)) {
        free(copy);
        dec_type_free(t);
        return TFTAP_ENOMEM;
    }
    tb->v[tb->n++] = (struct entry){copy, t, s->seq++};
    return 0;
}

static void function_done(struct dec_function *f)
{
    free(f->name);
    for (size_t i = 0; i < f->nparams; i++)
        dec_type_free(f->params[i]);
    free(f->params);
    dec_type_free(f->variadic);
    dec_type_free(f->ret);
}

static int function_cmp(const void *a, const void *b)
{
    const struct dec_function *x = a, *y = b;
    return strcmp(x->name, y->name);
}

/* Sort every table, keeping only the last definition of each name, so
 * lookups can bisect. */
static void schema_finish(dec_schema *s)
{
    for (size_t k = 0; k < NKINDS; k++) {
        struct table *tb = &s->t[k];
        if (tb->n < 2)
            continue;
        qsort(tb->v, tb->n, sizeof *tb->v, entry_cmp);
        size_t w = 0;
        for (size_t i = 0; i < tb->n; i++) {
            if (i + 1 < tb->n && strcmp(tb->v[i].name, tb->v[i + 1].name) == 0) {
                free(tb->v[i].name);
                dec_type_free(tb->v[i].type);
                continue;
            }
            tb->v[w++] = tb->v[i];
        }
        tb->n = w;
    }
    /* Functions arrive from a map already free of duplicates unless the
     * peer repeats a key; keep the last one then too. */
    if (s->nfn > 1) {
        size_t w = 0;
        /* Sort (name, position) pairs so the last definition is known. */
        struct entry *tmp = malloc(s->nfn * sizeof *tmp);
        struct dec_function *sorted = tmp ? malloc(s->nfn * sizeof *sorted) : NULL;
        if (!sorted) {
            free(tmp);
            qsort(s->fn, s->nfn, sizeof *s->fn, function_cmp); /* still searchable */
            return;
        }
        for (size_t i = 0; i < s->nfn; i++)
            tmp[i] = (struct entry){s->fn[i].name, NULL, i};
        qsort(tmp, s->nfn, sizeof *tmp, entry_cmp);
        for (size_t i = 0; i < s->nfn; i++) {
            struct dec_function *f = &s->fn[tmp[i].seq];
            if (i + 1 < s->nfn && strcmp(tmp[i].name, tmp[i + 1].name) == 0) {
                function_done(f);
                continue;
            }
            sorted[w++] = *f;
        }
        free(tmp);
        free(s->fn);
        s->fn = sorted;
        s->nfn = w;
        s->fncap = s->nfn;
    }
}

void dec_schema_free(dec_schema *s)
{
    if (!s)
        return;
    for (size_t k = 0; k < NKINDS; k++) {
        for (size_t i = 0; i < s->t[k].n; i++) {
            free(s->t[k].v[i].name);
            dec_type_free(s->t[k].v[i].type);
        }
        free(s->t[k].v);
    }
    for (size_t i = 0; i < s->nfn; i++)
        function_done(&s->fn[i]);
    free(s->fn);
    free(s);
}

const dec_type *dec_schema_lookup(const dec_schema *s, enum dec_schema_kind kind, const char *name)
{
    if (!s || (size_t)kind >= NKINDS)
        return NULL;
    const struct table *tb = &s->t[kind];
    if (kind == DEC_SCHEMA_PROVIDER || kind == DEC_SCHEMA_PROVIDER_META)
        return tb->n ? tb->v[tb->n - 1].type : NULL;
    if (!name)
        return NULL;
    size_t lo = 0, hi = tb->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, tb->v[mid].name);
        if (c == 0)
            return tb->v[mid].type;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

const struct dec_function *dec_schema_function(const dec_schema *s, const char *name)
{
    if (!s || !name || !s->nfn)
        return NULL;
    struct dec_function key = {.name = (char *)name};
    return bsearch(&key, s->fn, s->nfn, sizeof *s->fn, function_cmp);
}

const dec_type *dec_function_arg_type(const struct dec_function *fn, size_t i)
{
    if (!fn)
        return NULL;
    return i < fn->nparams ? fn->params[i] : fn->variadic;
}

int dec_type_has_dynamic(const dec_type *t)
{
    if (!t)
        return 0;
    switch (t->kind) {
    case DEC_DYNAMIC:
        return 1;
    case DEC_LIST:
    case DEC_SET:
    case DEC_MAP:
        return dec_type_has_dynamic(t->elem);
    case DEC_OBJECT:
        for (size_t i = 0; i < t->n; i++)
            if (dec_type_has_dynamic(t->attrs[i].type))
                return 1;
        return 0;
    case DEC_TUPLE:
        for (size_t i = 0; i < t->n; i++)
            if (dec_type_has_dynamic(t->elems[i]))
                return 1;
        return 0;
    default:
        return 0;
    }
}

/* ---- building types ----------------------------------------------------------- */

struct build {
    dec_schema *s;
    dec_error *err;
    unsigned max_depth;
    tftap_buf path; /* where in the schema we are, for error messages */
};

static int bfail(struct build *b, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int bfail(struct build *b, int code, const char *fmt, ...)
{
    if (b->err && !b->err->code) {
        tftap_buf reason = TFTAP_BUF_INIT;
        va_list ap;
        va_start(ap, fmt);
        char small[1];
        int len = vsnprintf(small, sizeof small, fmt, ap);
        va_end(ap);
        if (len > 0 && tftap_buf_reserve(&reason, (size_t)len + 1) == 0) {
            va_start(ap, fmt);
            vsnprintf(reason.data, (size_t)len + 1, fmt, ap);
            va_end(ap);
            reason.len = (size_t)len;
        }
        dec_error_set(b->err, code, tftap_buf_cstr(&b->path), "%s", tftap_buf_cstr(&reason));
        tftap_buf_done(&reason);
    }
    return code;
}

static void append_name(tftap_buf *out, const char *name, size_t len)
{
    tftap_buf_putc(out, '[');
    if (dec_utf8_valid(name, len))
        tftap_buf_json_string(out, name, len);
    else
        tftap_buf_puts(out, "\"<invalid utf-8>\"");
    tftap_buf_putc(out, ']');
}

static int is_identifier(const char *s)
{
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '-'))
            return 0;
    return 1;
}

/* Extend the path with `.word["name"]` (a table entry) or `.name` (an
 * attribute or block, `["name"]` when not an identifier); returns the mark
 * path_pop restores. */
static size_t path_push(struct build *b, const char *word, const char *name)
{
    size_t mark = b->path.len;
    if (word) {
        tftap_buf_putc(&b->path, '.');
        tftap_buf_puts(&b->path, word);
        if (name)
            append_name(&b->path, name, strlen(name));
    } else if (name && is_identifier(name)) {
        tftap_buf_putc(&b->path, '.');
        tftap_buf_puts(&b->path, name);
    } else if (name) {
        append_name(&b->path, name, strlen(name));
    }
    return mark;
}

static void path_pop(struct build *b, size_t mark)
{
    if (b->path.data && mark <= b->path.len) {
        b->path.len = mark;
        b->path.data[mark] = '\0';
    }
}

static int check_depth(struct build *b, unsigned depth)
{
    if (depth >= b->max_depth)
        return bfail(b, TFTAP_ELIMIT, "schema nested deeper than %u levels", b->max_depth);
    return 0;
}

static int parse_type(struct build *b, const char *json, size_t n, unsigned depth, dec_type **out)
{
    *out = NULL;
    if (!json || n == 0)
        return bfail(b, TFTAP_EDECODE, "attribute has neither a type nor a nested type");
    int rc = check_depth(b, depth);
    if (rc)
        return rc;
    /* The type's own levels count toward the same depth budget. */
    dec_limits lim = {b->max_depth - depth, 0};
    dec_error e = DEC_ERROR_INIT;
    rc = dec_type_parse(json, n, &lim, out, &e);
    if (rc) {
        if (e.path && e.path[0])
            bfail(b, rc, "%s (at %s in the type)", e.reason ? e.reason : "invalid type", e.path);
        else
            bfail(b, rc, "%s", e.reason ? e.reason : "invalid type");
    }
    dec_error_done(&e);
    return rc;
}

/* Attributes of one object under construction. */
struct attrs {
    struct dec_attr *v;
    size_t n, cap;
};

static void attrs_release(struct attrs *a)
{
    for (size_t i = 0; i < a->n; i++) {
        free(a->v[i].name);
        dec_type_free(a->v[i].type);
    }
    free(a->v);
    a->v = NULL;
    a->n = a->cap = 0;
}

/* Takes t, also on failure. */
static int attrs_push(struct build *b, struct attrs *a, const char *name, dec_type *t,
                      int sensitive, int write_only)
{
    size_t len = strlen(name);
    if (!dec_utf8_valid(name, len)) {
        dec_type_free(t);
        return bfail(b, TFTAP_EDECODE, "attribute name is not valid utf-8");
    }
    char *copy = malloc(len + 1);
    if (!copy || grow((void **)&a->v, &a->cap, a->n, sizeof *a->v)) {
        free(copy);
        dec_type_free(t);
        return bfail(b, TFTAP_ENOMEM, "out of memory");
    }
    memcpy(copy, name, len + 1);
    a->v[a->n++] = (struct dec_attr){
        .name = copy,
        .name_len = len,
        .type = t,
        .sensitive = sensitive != 0,
        .write_only = write_only != 0,
    };
    return 0;
}

static int attr_name_cmp(const void *x, const void *y)
{
    const struct dec_attr *a = x, *b = y;
    size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
    int c = memcmp(a->name, b->name, n);
    if (c)
        return c;
    return a->name_len < b->name_len ? -1 : a->name_len > b->name_len;
}

/* Sort the first n attributes so block types can be checked against them. */
static void attrs_sort(struct attrs *a)
{
    if (a->n > 1)
        qsort(a->v, a->n, sizeof *a->v, attr_name_cmp);
}

static int attrs_contains(const struct attrs *a, size_t n, const char *name)
{
    struct dec_attr key = {.name = (char *)name, .name_len = strlen(name)};
    return n && bsearch(&key, a->v, n, sizeof *a->v, attr_name_cmp) != NULL;
}

/* Turn the attributes into an object type; a is emptied either way. */
static int attrs_finish(struct build *b, struct attrs *a, dec_type **out)
{
    int rc = dec_type_new_object(a->v, a->n, out);
    a->v = NULL;
    a->n = a->cap = 0;
    if (rc == TFTAP_EINVAL)
        return bfail(b, TFTAP_EDECODE, "duplicate attribute or block type name");
    if (rc)
        return bfail(b, rc, "out of memory");
    return 0;
}

static int empty_object(struct build *b, dec_type **out)
{
    struct attrs a = {NULL, 0, 0};
    return attrs_finish(b, &a, out);
}

/* The type a nested block of the given mode contributes to its parent, or
 * NULL in *out for an invalid mode (which adds nothing, as in OpenTofu).
 * LIST and MAP blocks with dynamically typed content become `dynamic`:
 * their values travel as tuples and objects whose exact type only the value
 * knows. Takes inner. */
static int wrap_block(struct build *b, int64_t mode, dec_type *inner, dec_type **out)
{
    *out = NULL;
    switch (mode) {
    case NEST_SINGLE:
    case NEST_GROUP:
        *out = inner;
        return 0;
    case NEST_LIST:
    case NEST_MAP:
        if (dec_type_has_dynamic(inner)) {
            dec_type_free(inner);
            *out = dec_type_new(DEC_DYNAMIC);
        } else {
            *out = dec_type_new_collection(mode == NEST_LIST ? DEC_LIST : DEC_MAP, inner);
        }
        break;
    case NEST_SET:
        *out = dec_type_new_collection(DEC_SET, inner);
        break;
    default:
        dec_type_free(inner);
        return 0;
    }
    return *out ? 0 : bfail(b, TFTAP_ENOMEM, "out of memory");
}

/* The type of a protocol-6 nested attribute type (or its JSON form). Takes
 * obj. Invalid modes give an empty object, as in OpenTofu. */
static int wrap_object(struct build *b, int64_t mode, dec_type *obj, dec_type **out)
{
    *out = NULL;
    switch (mode) {
    case NEST_SINGLE:
        *out = obj;
        return 0;
    case NEST_LIST:
        *out = dec_type_new_collection(DEC_LIST, obj);
        break;
    case NEST_SET:
        *out = dec_type_new_collection(DEC_SET, obj);
        break;
    case NEST_MAP:
        *out = dec_type_new_collection(DEC_MAP, obj);
        break;
    default:
        dec_type_free(obj);
        return empty_object(b, out);
    }
    return *out ? 0 : bfail(b, TFTAP_ENOMEM, "out of memory");
}

/* ---- from protobuf ------------------------------------------------------------- */

static int pb_block(struct build *b, const ProtobufCMessage *blk, unsigned depth, dec_type **out);

static int pb_object(struct build *b, const ProtobufCMessage *obj, unsigned depth, dec_type **out);

static int pb_attribute(struct build *b, const ProtobufCMessage *a, unsigned depth,
                        struct attrs *into)
{
    const char *name = dec_pb_string(a, "name");
    size_t mark = path_push(b, NULL, name);
    dec_type *t = NULL;
    int rc;
    const ProtobufCMessage *nested = dec_pb_message(a, "nested_type"); /* protocol 6 */
    if (nested) {
        rc = pb_object(b, nested, depth + 1, &t);
    } else {
        size_t n;
        const uint8_t *p = dec_pb_bytes(a, "type", &n);
        rc = parse_type(b, (const char *)p, n, depth + 1, &t);
    }
    if (!rc)
        rc =
            attrs_push(b, into, name, t, dec_pb_bool(a, "sensitive"), dec_pb_bool(a, "write_only"));
    path_pop(b, mark);
    return rc;
}

static int pb_object(struct build *b, const ProtobufCMessage *obj, unsigned depth, dec_type **out)
{
    int rc = check_depth(b, depth);
    if (rc)
        return rc;
    struct attrs a = {NULL, 0, 0};
    ProtobufCMessage *const *items;
    size_t n = dec_pb_messages(obj, "attributes", &items);
    for (size_t i = 0; i < n && !rc; i++)
        rc = pb_attribute(b, items[i], depth, &a);
    dec_type *o = NULL;
    if (!rc)
        rc = attrs_finish(b, &a, &o);
    attrs_release(&a);
    if (rc)
        return rc;
    return wrap_object(b, dec_pb_int(obj, "nesting"), o, out);
}

static int pb_block(struct build *b, const ProtobufCMessage *blk, unsigned depth, dec_type **out)
{
    *out = NULL;
    int rc = check_depth(b, depth);
    if (rc)
        return rc;
    struct attrs a = {NULL, 0, 0};
    ProtobufCMessage *const *items;
    size_t n = dec_pb_messages(blk, "attributes", &items);
    for (size_t i = 0; i < n && !rc; i++)
        rc = pb_attribute(b, items[i], depth, &a);
    attrs_sort(&a);
    size_t nattrs = a.n;
    n = dec_pb_messages(blk, "block_types", &items);
    for (size_t i = 0; i < n && !rc; i++) {
        const char *name = dec_pb_string(items[i], "type_name");
        /* A block type named like an attribute is ignored, as in OpenTofu. */
        if (attrs_contains(&a, nattrs, name))
            continue;
        size_t mark = path_push(b, NULL, name);
        dec_type *inner = NULL, *t = NULL;
        rc = pb_block(b, dec_pb_message(items[i], "block"), depth + 1, &inner);
        if (!rc)
            rc = wrap_block(b, dec_pb_int(items[i], "nesting"), inner, &t);
        if (!rc && t)
            rc = attrs_push(b, &a, name, t, 0, 0);
        path_pop(b, mark);
    }
    if (!rc)
        rc = attrs_finish(b, &a, out);
    attrs_release(&a);
    return rc;
}

/* A Schema message's implied type; an absent block is an empty object. */
static int pb_schema(struct build *b, const ProtobufCMessage *schema, dec_type **out)
{
    return pb_block(b, dec_pb_message(schema, "block"), 0, out);
}

static int pb_param_type(struct build *b, const ProtobufCMessage *param, dec_type **out)
{
    size_t n;
    const uint8_t *p = dec_pb_bytes(param, "type", &n);
    return parse_type(b, (const char *)p, n, 0, out);
}

static int function_add(struct build *b, struct dec_function *f)
{
    dec_schema *s = b->s;
    if (grow((void **)&s->fn, &s->fncap, s->nfn, sizeof *s->fn)) {
        function_done(f);
        return bfail(b, TFTAP_ENOMEM, "out of memory");
    }
    s->fn[s->nfn++] = *f;
    return 0;
}

static int pb_function(struct build *b, const char *name, const ProtobufCMessage *fm)
{
    struct dec_function f = {0};
    int rc = 0;
    f.name = strdup(name);
    ProtobufCMessage *const *params;
    size_t n = dec_pb_messages(fm, "parameters", &params);
    if (!f.name || (n && !(f.params = calloc(n, sizeof *f.params)))) {
        rc = bfail(b, TFTAP_ENOMEM, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < n && !rc; i++) {
        size_t mark = path_push(b, "parameters", NULL);
        tftap_buf_printf(&b->path, "[%zu]", i);
        rc = pb_param_type(b, params[i], &f.params[i]);
        path_pop(b, mark);
        f.nparams = i + 1;
    }
    const ProtobufCMessage *v = dec_pb_message(fm, "variadic_parameter");
    if (!rc && v) {
        size_t mark = path_push(b, "variadic_parameter", NULL);
        rc = pb_param_type(b, v, &f.variadic);
        path_pop(b, mark);
    }
    const ProtobufCMessage *r = dec_pb_message(fm, "return");
    if (!rc && r) {
        size_t mark = path_push(b, "return", NULL);
        rc = pb_param_type(b, r, &f.ret);
        path_pop(b, mark);
    }
    if (rc)
        goto fail;
    return function_add(b, &f);
fail:
    function_done(&f);
    return rc;
}

/* One map<string, Schema> (or ActionSchema, whose schema is one level down). */
static int pb_schema_map(struct build *b, const ProtobufCMessage *resp, const char *field,
                         enum dec_schema_kind kind, int wrapped)
{
    ProtobufCMessage *const *entries;
    size_t n = dec_pb_messages(resp, field, &entries);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const char *name = dec_pb_string(entries[i], "key");
        const ProtobufCMessage *schema = dec_pb_message(entries[i], "value");
        if (wrapped)
            schema = dec_pb_message(schema, "schema");
        size_t mark = path_push(b, field, name);
        dec_type *t = NULL;
        rc = pb_schema(b, schema, &t);
        if (!rc)
            rc = table_add(b->s, kind, name, t) ? bfail(b, TFTAP_ENOMEM, "out of memory") : 0;
        path_pop(b, mark);
    }
    return rc;
}

static int build_from_response(struct build *b, const ProtobufCMessage *resp)
{
    dec_type *t = NULL;
    size_t mark = path_push(b, "provider", NULL);
    /* No provider schema means an empty configuration block. */
    int rc = pb_schema(b, dec_pb_message(resp, "provider"), &t);
    if (!rc)
        rc = table_add(b->s, DEC_SCHEMA_PROVIDER, "", t) ? bfail(b, TFTAP_ENOMEM, "out of memory")
                                                         : 0;
    path_pop(b, mark);
    const ProtobufCMessage *meta = dec_pb_message(resp, "provider_meta");
    if (!rc && meta) {
        mark = path_push(b, "provider_meta", NULL);
        rc = pb_schema(b, meta, &t);
        if (!rc)
            rc = table_add(b->s, DEC_SCHEMA_PROVIDER_META, "", t)
                     ? bfail(b, TFTAP_ENOMEM, "out of memory")
                     : 0;
        path_pop(b, mark);
    }
    if (!rc)
        rc = pb_schema_map(b, resp, "resource_schemas", DEC_SCHEMA_RESOURCE, 0);
    if (!rc)
        rc = pb_schema_map(b, resp, "data_source_schemas", DEC_SCHEMA_DATA_SOURCE, 0);
    if (!rc)
        rc = pb_schema_map(b, resp, "ephemeral_resource_schemas", DEC_SCHEMA_EPHEMERAL, 0);
    if (!rc)
        rc = pb_schema_map(b, resp, "list_resource_schemas", DEC_SCHEMA_LIST_RESOURCE, 0);
    if (!rc)
        rc = pb_schema_map(b, resp, "action_schemas", DEC_SCHEMA_ACTION, 1);
    if (!rc)
        rc = pb_schema_map(b, resp, "state_store_schemas", DEC_SCHEMA_STATE_STORE, 0);
    ProtobufCMessage *const *fns;
    size_t n = dec_pb_messages(resp, "functions", &fns);
    for (size_t i = 0; i < n && !rc; i++) {
        const char *name = dec_pb_string(fns[i], "key");
        mark = path_push(b, "functions", name);
        rc = pb_function(b, name, dec_pb_message(fns[i], "value"));
        path_pop(b, mark);
    }
    return rc;
}

static dec_schema *schema_new(const dec_limits *lim)
{
    dec_schema *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->lim.max_depth = lim && lim->max_depth ? lim->max_depth : DEC_DEFAULT_MAX_DEPTH;
    s->lim.max_bytes = lim && lim->max_bytes ? lim->max_bytes : DEC_DEFAULT_MAX_BYTES;
    return s;
}

static const ProtobufCMessageDescriptor *schema_descriptor(int protocol)
{
    switch (protocol) {
    case 5:
        return &tfplugin5__get_provider_schema__response__descriptor;
    case 6:
        return &tfplugin6__get_provider_schema__response__descriptor;
    default:
        return NULL;
    }
}

int dec_schema_from_provider_schema(int protocol, const void *p, size_t n, const dec_limits *lim,
                                    dec_schema **out, dec_error *err)
{
    *out = NULL;
    const ProtobufCMessageDescriptor *d = schema_descriptor(protocol);
    if (!d) {
        dec_error_set(err, TFTAP_EINVAL, "", "unsupported protocol version %d", protocol);
        return TFTAP_EINVAL;
    }
    dec_schema *s = schema_new(lim);
    if (!s) {
        dec_error_set(err, TFTAP_ENOMEM, "", "out of memory");
        return TFTAP_ENOMEM;
    }
    ProtobufCMessage *resp = NULL;
    int rc = dec_pb_unpack(d, p, n, &s->lim, &resp, err);
    if (rc)
        goto fail;
    struct build b = {s, err, s->lim.max_depth, TFTAP_BUF_INIT};
    rc = build_from_response(&b, resp);
    tftap_buf_done(&b.path);
    dec_pb_free(resp);
    if (rc)
        goto fail;
    schema_finish(s);
    *out = s;
    return 0;
fail:
    dec_schema_free(s);
    return rc;
}

int dec_schema_add_identities(dec_schema *s, int protocol, const void *p, size_t n, dec_error *err)
{
    const ProtobufCMessageDescriptor *d =
        protocol == 5   ? &tfplugin5__get_resource_identity_schemas__response__descriptor
        : protocol == 6 ? &tfplugin6__get_resource_identity_schemas__response__descriptor
                        : NULL;
    if (!s || !d) {
        dec_error_set(err, TFTAP_EINVAL, "", "unsupported protocol version %d", protocol);
        return TFTAP_EINVAL;
    }
    ProtobufCMessage *resp = NULL;
    int rc = dec_pb_unpack(d, p, n, &s->lim, &resp, err);
    if (rc)
        return rc;
    struct build b = {s, err, s->lim.max_depth, TFTAP_BUF_INIT};
    /* Build all first, so a failure leaves the schema as it was. */
    dec_schema staged = {.lim = s->lim};
    b.s = &staged;
    ProtobufCMessage *const *entries;
    size_t ne = dec_pb_messages(resp, "identity_schemas", &entries);
    for (size_t i = 0; i < ne && !rc; i++) {
        const char *name = dec_pb_string(entries[i], "key");
        const ProtobufCMessage *ids = dec_pb_message(entries[i], "value");
        size_t mark = path_push(&b, "identity_schemas", name);
        struct attrs a = {NULL, 0, 0};
        ProtobufCMessage *const *items;
        size_t na = dec_pb_messages(ids, "identity_attributes", &items);
        for (size_t k = 0; k < na && !rc; k++) {
            const char *an = dec_pb_string(items[k], "name");
            size_t m2 = path_push(&b, NULL, an);
            dec_type *t = NULL;
            size_t tn;
            const uint8_t *tp = dec_pb_bytes(items[k], "type", &tn);
            rc = parse_type(&b, (const char *)tp, tn, 1, &t);
            if (!rc)
                rc = attrs_push(&b, &a, an, t, 0, 0);
            path_pop(&b, m2);
        }
        dec_type *obj = NULL;
        if (!rc)
            rc = attrs_finish(&b, &a, &obj);
        attrs_release(&a);
        if (!rc && table_add(&staged, DEC_SCHEMA_IDENTITY, name, obj))
            rc = bfail(&b, TFTAP_ENOMEM, "out of memory");
        path_pop(&b, mark);
    }
    tftap_buf_done(&b.path);
    dec_pb_free(resp);
    /* Only out of memory can leave part of the identities added. */
    struct table *from = &staged.t[DEC_SCHEMA_IDENTITY];
    for (size_t i = 0; i < from->n; i++) {
        dec_type *t = from->v[i].type;
        if (rc) {
            dec_type_free(t);
        } else if (table_add(s, DEC_SCHEMA_IDENTITY, from->v[i].name, t)) {
            dec_error_set(err, TFTAP_ENOMEM, "", "out of memory");
            rc = TFTAP_ENOMEM;
        }
        free(from->v[i].name);
    }
    free(from->v);
    schema_finish(s);
    return rc;
}

/* ---- from `tofu providers schema -json` -------------------------------------- */

/* How deep the document may nest (what cJSON, its reader before, allowed);
 * the schema's own depth bound says which block was too deep. */
#define SCHEMA_JSON_MAX_DEPTH 1000

static const sj_node *jget(const sj_node *o, const char *key)
{
    return sj_get(o, key);
}

static int jtrue(const sj_node *n)
{
    return n && n->kind == SJ_BOOL && n->boolean;
}

static int jis_object(const sj_node *n)
{
    return n && n->kind == SJ_OBJECT;
}

/* The members of an object, elements of an array; none for anything else. */
static const sj_node *jfirst(const sj_node *n)
{
    return n && (n->kind == SJ_OBJECT || n->kind == SJ_ARRAY) ? n->child : NULL;
}

static int json_type(struct build *b, const sj_node *node, unsigned depth, dec_type **out)
{
    *out = NULL;
    if (!node)
        return parse_type(b, NULL, 0, depth, out);
    tftap_buf text = TFTAP_BUF_INIT;
    sj_write(node, &text);
    if (tftap_buf_failed(&text))
        return bfail(b, TFTAP_ENOMEM, "out of memory");
    int rc = parse_type(b, tftap_buf_cstr(&text), text.len, depth, out);
    tftap_buf_done(&text);
    return rc;
}

static int json_mode(const sj_node *node)
{
    static const char *const names[] = {"invalid", "single", "list", "set", "map", "group"};
    const char *s = node && node->kind == SJ_STRING ? node->str : NULL;
    for (int i = 0; s && i < (int)(sizeof names / sizeof names[0]); i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return NEST_INVALID;
}

static int json_object(struct build *b, const sj_node *obj, unsigned depth, dec_type **out);

static int json_attributes(struct build *b, const sj_node *attrs, unsigned depth,
                           struct attrs *into)
{
    int rc = 0;
    const sj_node *a;
    if (attrs && !jis_object(attrs))
        return bfail(b, TFTAP_EDECODE, "attributes is not an object");
    for (a = jfirst(attrs); a; a = a->next) {
        size_t mark = path_push(b, NULL, a->key);
        dec_type *t = NULL;
        const sj_node *nested = jget(a, "nested_type");
        if (nested)
            rc = json_object(b, nested, depth + 1, &t);
        else
            rc = json_type(b, jget(a, "type"), depth + 1, &t);
        if (!rc)
            rc = attrs_push(b, into, a->key, t, jtrue(jget(a, "sensitive")),
                            jtrue(jget(a, "write_only")));
        path_pop(b, mark);
        if (rc)
            break;
    }
    return rc;
}

static int json_object(struct build *b, const sj_node *obj, unsigned depth, dec_type **out)
{
    int rc = check_depth(b, depth);
    if (rc)
        return rc;
    struct attrs a = {NULL, 0, 0};
    rc = json_attributes(b, jget(obj, "attributes"), depth, &a);
    dec_type *o = NULL;
    if (!rc)
        rc = attrs_finish(b, &a, &o);
    attrs_release(&a);
    if (rc)
        return rc;
    return wrap_object(b, json_mode(jget(obj, "nesting_mode")), o, out);
}

static int json_block(struct build *b, const sj_node *blk, unsigned depth, dec_type **out)
{
    *out = NULL;
    int rc = check_depth(b, depth);
    if (rc)
        return rc;
    struct attrs a = {NULL, 0, 0};
    rc = json_attributes(b, jget(blk, "attributes"), depth, &a);
    attrs_sort(&a);
    size_t nattrs = a.n;
    const sj_node *types = jget(blk, "block_types"), *bt;
    if (!rc && types && !jis_object(types))
        rc = bfail(b, TFTAP_EDECODE, "block_types is not an object");
    if (!rc) {
        for (bt = jfirst(types); bt; bt = bt->next) {
            if (attrs_contains(&a, nattrs, bt->key))
                continue;
            size_t mark = path_push(b, NULL, bt->key);
            dec_type *inner = NULL, *t = NULL;
            rc = json_block(b, jget(bt, "block"), depth + 1, &inner);
            if (!rc)
                rc = wrap_block(b, json_mode(jget(bt, "nesting_mode")), inner, &t);
            if (!rc && t)
                rc = attrs_push(b, &a, bt->key, t, 0, 0);
            path_pop(b, mark);
            if (rc)
                break;
        }
    }
    if (!rc)
        rc = attrs_finish(b, &a, out);
    attrs_release(&a);
    return rc;
}

static int json_schema_map(struct build *b, const sj_node *prov, const char *field,
                           enum dec_schema_kind kind)
{
    const sj_node *map = jget(prov, field), *e;
    if (map && !jis_object(map))
        return bfail(b, TFTAP_EDECODE, "%s is not an object", field);
    int rc = 0;
    for (e = jfirst(map); e; e = e->next) {
        size_t mark = path_push(b, field, e->key);
        dec_type *t = NULL;
        rc = json_block(b, jget(e, "block"), 0, &t);
        if (!rc && table_add(b->s, kind, e->key, t))
            rc = bfail(b, TFTAP_ENOMEM, "out of memory");
        path_pop(b, mark);
        if (rc)
            break;
    }
    return rc;
}

static int json_function(struct build *b, const char *name, const sj_node *fj)
{
    struct dec_function f = {0};
    int rc = 0;
    const sj_node *params = jget(fj, "parameters");
    size_t n = params && params->kind == SJ_ARRAY ? params->n : 0;
    f.name = strdup(name);
    if (!f.name || (n && !(f.params = calloc(n, sizeof *f.params)))) {
        rc = bfail(b, TFTAP_ENOMEM, "out of memory");
        goto fail;
    }
    const sj_node *p, *list = n ? params : NULL;
    size_t i = 0;
    for (p = jfirst(list); p; p = p->next) {
        size_t mark = path_push(b, "parameters", NULL);
        tftap_buf_printf(&b->path, "[%zu]", i);
        rc = json_type(b, jget(p, "type"), 0, &f.params[i]);
        path_pop(b, mark);
        f.nparams = ++i;
        if (rc)
            goto fail;
    }
    const sj_node *v = jget(fj, "variadic_parameter");
    if (v) {
        size_t mark = path_push(b, "variadic_parameter", NULL);
        rc = json_type(b, jget(v, "type"), 0, &f.variadic);
        path_pop(b, mark);
        if (rc)
            goto fail;
    }
    const sj_node *r = jget(fj, "return_type");
    if (r) {
        size_t mark = path_push(b, "return_type", NULL);
        rc = json_type(b, r, 0, &f.ret);
        path_pop(b, mark);
        if (rc)
            goto fail;
    }
    return function_add(b, &f);
fail:
    function_done(&f);
    return rc;
}

static int json_identities(struct build *b, const sj_node *prov)
{
    const sj_node *map = jget(prov, "resource_identity_schemas"), *e;
    int rc = 0;
    if (!jis_object(map))
        return 0;
    for (e = jfirst(map); e; e = e->next) {
        size_t mark = path_push(b, "resource_identity_schemas", e->key);
        struct attrs a = {NULL, 0, 0};
        dec_type *t = NULL;
        rc = json_attributes(b, jget(e, "attributes"), 0, &a);
        if (!rc)
            rc = attrs_finish(b, &a, &t);
        attrs_release(&a);
        if (!rc && table_add(b->s, DEC_SCHEMA_IDENTITY, e->key, t))
            rc = bfail(b, TFTAP_ENOMEM, "out of memory");
        path_pop(b, mark);
        if (rc)
            break;
    }
    return rc;
}

/* Whether address key names the provider the user asked for: equal, or
 * ending in "/" + want. */
static int provider_matches(const char *key, const char *want)
{
    size_t kl = strlen(key), wl = strlen(want);
    if (kl == wl)
        return strcmp(key, want) == 0;
    return kl > wl && key[kl - wl - 1] == '/' && strcmp(key + kl - wl, want) == 0;
}

int dec_schema_from_cli_json(const char *json, size_t n, const char *provider,
                             const dec_limits *lim, dec_schema **out, dec_error *err)
{
    *out = NULL;
    dec_schema *s = schema_new(lim);
    sj_doc *root = NULL;
    int rc = 0;
    if (!s) {
        dec_error_set(err, TFTAP_ENOMEM, "", "out of memory");
        return TFTAP_ENOMEM;
    }
    if (n > s->lim.max_bytes) {
        dec_error_set(err, TFTAP_ELIMIT, "", "schema document of %zu bytes exceeds the limit", n);
        rc = TFTAP_ELIMIT;
        goto done;
    }
    rc = sj_parse(json, n, SCHEMA_JSON_MAX_DEPTH, &root);
    if (rc == TFTAP_ENOMEM) {
        dec_error_set(err, rc, "", "out of memory");
        goto done;
    }
    if (rc == TFTAP_ELIMIT) {
        dec_error_set(err, rc, "", "schema document nested deeper than %d levels",
                      SCHEMA_JSON_MAX_DEPTH);
        goto done;
    }
    if (rc) {
        dec_error_set(err, TFTAP_EDECODE, "", "schema document is not valid json");
        rc = TFTAP_EDECODE;
        goto done;
    }
    const sj_node *all = jget(sj_root(root), "provider_schemas");
    if (!jis_object(all)) {
        dec_error_set(err, TFTAP_EDECODE, "",
                      "no provider_schemas object: not `providers schema -json` output");
        rc = TFTAP_EDECODE;
        goto done;
    }
    const sj_node *prov = NULL, *e;
    int matches = 0;
    for (e = jfirst(all); e; e = e->next) {
        if (!provider || provider_matches(e->key, provider)) {
            prov = e;
            matches++;
        }
    }
    if (matches != 1) {
        if (matches == 0 && provider)
            dec_error_set(err, TFTAP_ENOTFOUND, "", "no provider matching \"%s\" in the schema",
                          dec_utf8_valid(provider, strlen(provider)) ? provider : "?");
        else if (matches == 0)
            dec_error_set(err, TFTAP_ENOTFOUND, "", "the schema document holds no provider");
        else
            dec_error_set(err, TFTAP_EINVAL, "",
                          "the schema document holds %d matching providers: name one", matches);
        rc = matches == 0 ? TFTAP_ENOTFOUND : TFTAP_EINVAL;
        goto done;
    }
    struct build b = {s, err, s->lim.max_depth, TFTAP_BUF_INIT};
    dec_type *t = NULL;
    size_t mark = path_push(&b, "provider", NULL);
    rc = json_block(&b, jget(jget(prov, "provider"), "block"), 0, &t);
    if (!rc && table_add(s, DEC_SCHEMA_PROVIDER, "", t))
        rc = bfail(&b, TFTAP_ENOMEM, "out of memory");
    path_pop(&b, mark);
    if (!rc)
        rc = json_schema_map(&b, prov, "resource_schemas", DEC_SCHEMA_RESOURCE);
    if (!rc)
        rc = json_schema_map(&b, prov, "data_source_schemas", DEC_SCHEMA_DATA_SOURCE);
    if (!rc)
        rc = json_schema_map(&b, prov, "ephemeral_resource_schemas", DEC_SCHEMA_EPHEMERAL);
    if (!rc)
        rc = json_schema_map(&b, prov, "list_resource_schemas", DEC_SCHEMA_LIST_RESOURCE);
    if (!rc)
        rc = json_schema_map(&b, prov, "action_schemas", DEC_SCHEMA_ACTION);
    if (!rc)
        rc = json_schema_map(&b, prov, "state_store_schemas", DEC_SCHEMA_STATE_STORE);
    if (!rc)
        rc = json_identities(&b, prov);
    const sj_node *fns = jget(prov, "functions");
    if (rc || !jis_object(fns))
        fns = NULL;
    for (e = jfirst(fns); e; e = e->next) {
        mark = path_push(&b, "functions", e->key);
        rc = json_function(&b, e->key, e);
        path_pop(&b, mark);
        if (rc)
            break;
    }
    tftap_buf_done(&b.path);
    if (!rc)
        schema_finish(s);
done:
    sj_free(root);
    if (rc) {
        dec_schema_free(s);
        return rc;
    }
    *out = s;
    return 0;
}
