/* decoder: cty types: building, parsing type JSON, printing it back. */
#include "decoder/decoder_int.h"

#include <stdlib.h>
#include <string.h>

dec_type *dec_type_new(enum dec_kind kind)
{
    dec_type *t = calloc(1, sizeof *t);
    if (t)
        t->kind = kind;
    return t;
}

dec_type *dec_type_new_collection(enum dec_kind kind, dec_type *elem)
{
    dec_type *t = elem ? dec_type_new(kind) : NULL;
    if (!t) {
        dec_type_free(elem);
        return NULL;
    }
    t->elem = elem;
    return t;
}

dec_type *dec_type_new_tuple(dec_type **elems, size_t n)
{
    dec_type *t = dec_type_new(DEC_TUPLE);
    if (!t) {
        for (size_t i = 0; i < n; i++)
            dec_type_free(elems[i]);
        free(elems);
        return NULL;
    }
    t->elems = elems;
    t->n = n;
    return t;
}

static int attr_cmp(const void *a, const void *b)
{
    const struct dec_attr *x = a, *y = b;
    return tftap_bytes_cmp(x->name, x->name_len, y->name, y->name_len);
}

static void attrs_free(struct dec_attr *attrs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(attrs[i].name);
        free(attrs[i].json_key);
        dec_type_free(attrs[i].type);
    }
    free(attrs);
}

int dec_type_new_object(struct dec_attr *attrs, size_t n, dec_type **out)
{
    *out = NULL;
    if (n > 1)
        qsort(attrs, n, sizeof *attrs, attr_cmp);
    for (size_t i = 1; i < n; i++) {
        if (attr_cmp(&attrs[i - 1], &attrs[i]) == 0) {
            attrs_free(attrs, n);
            return TFTAP_EINVAL;
        }
    }
    /* Each name as the JSON key it is written as, once: the decoder
     * writes keys for every object of every value. */
    for (size_t i = 0; i < n; i++) {
        tftap_buf k = TFTAP_BUF_INIT;
        tftap_buf_json_string(&k, attrs[i].name, attrs[i].name_len);
        tftap_buf_putc(&k, ':');
        if (tftap_buf_failed(&k)) {
            attrs_free(attrs, n);
            return TFTAP_ENOMEM;
        }
        attrs[i].json_key = k.data;
        attrs[i].json_key_len = k.len;
    }
    dec_type *t = dec_type_new(DEC_OBJECT);
    if (!t) {
        attrs_free(attrs, n);
        return TFTAP_ENOMEM;
    }
    t->attrs = attrs;
    t->n = n;
    *out = t;
    return 0;
}

const struct dec_attr *dec_type_attr(const dec_type *t, const char *name, size_t len)
{
    size_t lo = 0, hi = t->n;
    struct dec_attr key = {.name = (char *)name, .name_len = len};
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = attr_cmp(&key, &t->attrs[mid]);
        if (c == 0)
            return &t->attrs[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

void dec_type_free(dec_type *t)
{
    if (!t)
        return;
    dec_type_free(t->elem);
    attrs_free(t->attrs, t->n * (t->kind == DEC_OBJECT));
    if (t->kind == DEC_TUPLE) {
        for (size_t i = 0; i < t->n; i++)
            dec_type_free(t->elems[i]);
        free(t->elems);
    }
    free(t);
}

/* ---- parsing --------------------------------------------------------- */

struct tparse {
    dec_error *err;
    unsigned max_depth;
    struct dec_step *steps; /* path of attribute names and tuple indexes */
    unsigned depth;         /* steps in use */
    unsigned level;         /* type nesting, bounded by max_depth */
};

static int tfail(struct tparse *p, const char *reason)
{
    if (p->err && !p->err->code) {
        tftap_buf path = TFTAP_BUF_INIT;
        dec_path_format(p->steps, p->depth, &path);
        dec_error_set(p->err, TFTAP_EDECODE, tftap_buf_cstr(&path), "invalid type: %s", reason);
        tftap_buf_done(&path);
    }
    return TFTAP_EDECODE;
}

static int parse_node(struct tparse *p, const sj_node *j, dec_type **out);

static int parse_object(struct tparse *p, const sj_node *attrs_j, const sj_node *opt_j,
                        dec_type **out)
{
    if (attrs_j->kind != SJ_OBJECT)
        return tfail(p, "object attributes must be a JSON object");
    size_t n = attrs_j->n;
    struct dec_attr *attrs = calloc(n ? n : 1, sizeof *attrs);
    if (!attrs)
        return TFTAP_ENOMEM;
    size_t i = 0;
    int rc = 0;
    for (const sj_node *a = attrs_j->child; a; a = a->next, i++) {
        attrs[i].name_len = a->key_len;
        if (!dec_utf8_valid(a->key, a->key_len)) {
            rc = tfail(p, "attribute name is not valid utf-8");
            goto fail;
        }
        if (memchr(a->key, '\0', a->key_len)) {
            rc = tfail(p, "attribute name holds a NUL character");
            goto fail;
        }
        attrs[i].name = strdup(a->key);
        if (!attrs[i].name) {
            rc = TFTAP_ENOMEM;
            goto fail;
        }
        p->steps[p->depth++] = (struct dec_step){DEC_STEP_ATTR, a->key, a->key_len, 0};
        rc = parse_node(p, a, &attrs[i].type);
        p->depth--;
        if (rc)
            goto fail;
    }
    if (opt_j) {
        if (opt_j->kind != SJ_ARRAY) {
            rc = tfail(p, "optional attributes must be a JSON array");
            goto fail;
        }
        for (const sj_node *o = opt_j->child; o; o = o->next) {
            if (o->kind != SJ_STRING) {
                rc = tfail(p, "optional attribute names must be strings");
                goto fail;
            }
            size_t k;
            for (k = 0; k < n; k++)
                if (attrs[k].name_len == o->len && memcmp(attrs[k].name, o->str, o->len) == 0)
                    break;
            if (k == n) {
                rc = tfail(p, "optional attribute is not an attribute of the object");
                goto fail;
            }
            attrs[k].optional = 1;
        }
    }
    rc = dec_type_new_object(attrs, n, out);
    if (rc == TFTAP_EINVAL)
        return tfail(p, "duplicate object attribute");
    return rc;
fail:
    attrs_free(attrs, n);
    return rc;
}

static int parse_kind(struct tparse *p, const sj_node *j, dec_type **out);

static int parse_node(struct tparse *p, const sj_node *j, dec_type **out)
{
    *out = NULL;
    if (p->level >= p->max_depth) {
        dec_error_set(p->err, TFTAP_ELIMIT, "", "type nested deeper than %u levels", p->max_depth);
        return TFTAP_ELIMIT;
    }
    p->level++;
    int rc = parse_kind(p, j, out);
    p->level--;
    return rc;
}

static int parse_kind(struct tparse *p, const sj_node *j, dec_type **out)
{
    if (j->kind == SJ_STRING) {
        const char *s = j->str;
        enum dec_kind k;
        if (strcmp(s, "string") == 0)
            k = DEC_STRING;
        else if (strcmp(s, "number") == 0)
            k = DEC_NUMBER;
        else if (strcmp(s, "bool") == 0)
            k = DEC_BOOL;
        else if (strcmp(s, "dynamic") == 0)
            k = DEC_DYNAMIC;
        else
            return tfail(p, "unknown primitive type");
        *out = dec_type_new(k);
        return *out ? 0 : TFTAP_ENOMEM;
    }
    if (j->kind != SJ_ARRAY || !j->child || j->child->kind != SJ_STRING)
        return tfail(p, "expected a type name or [kind, ...] array");
    const char *kind = j->child->str;
    const sj_node *a1 = j->child->next;
    const sj_node *a2 = a1 ? a1->next : NULL;
    if (!a1)
        return tfail(p, "missing element type");
    enum dec_kind ck;
    if (strcmp(kind, "list") == 0)
        ck = DEC_LIST;
    else if (strcmp(kind, "set") == 0)
        ck = DEC_SET;
    else if (strcmp(kind, "map") == 0)
        ck = DEC_MAP;
    else if (strcmp(kind, "object") == 0) {
        if (a2 && a2->next)
            return tfail(p, "too many elements in object type");
        return parse_object(p, a1, a2, out);
    } else if (strcmp(kind, "tuple") == 0) {
        if (a2)
            return tfail(p, "too many elements in tuple type");
        if (a1->kind != SJ_ARRAY)
            return tfail(p, "tuple element types must be a JSON array");
        size_t n = a1->n;
        dec_type **elems = calloc(n ? n : 1, sizeof *elems);
        if (!elems)
            return TFTAP_ENOMEM;
        size_t i = 0;
        for (const sj_node *e = a1->child; e; e = e->next, i++) {
            p->steps[p->depth++] = (struct dec_step){DEC_STEP_INDEX, NULL, 0, i};
            int rc = parse_node(p, e, &elems[i]);
            p->depth--;
            if (rc) {
                for (size_t k = 0; k < i; k++)
                    dec_type_free(elems[k]);
                free(elems);
                return rc;
            }
        }
        *out = dec_type_new_tuple(elems, n);
        return *out ? 0 : TFTAP_ENOMEM;
    } else {
        return tfail(p, "unknown type kind");
    }
    if (a2)
        return tfail(p, "too many elements in collection type");
    dec_type *elem;
    int rc = parse_node(p, a1, &elem);
    if (rc)
        return rc;
    *out = dec_type_new_collection(ck, elem);
    return *out ? 0 : TFTAP_ENOMEM;
}

int dec_type_parse(const char *json, size_t len, const dec_limits *lim, dec_type **out,
                   dec_error *err)
{
    *out = NULL;
    size_t max_bytes = lim && lim->max_bytes ? lim->max_bytes : DEC_DEFAULT_MAX_BYTES;
    if (len > max_bytes) {
        dec_error_set(err, TFTAP_ELIMIT, "", "type of %zu bytes is over the %zu byte limit", len,
                      max_bytes);
        return TFTAP_ELIMIT;
    }
    struct tparse p = {.err = err};
    p.max_depth = lim && lim->max_depth ? lim->max_depth : DEC_DEFAULT_MAX_DEPTH;
    /* Each type level is at most two JSON levels (["object", {...}]); the
     * type's own bound below says which level was too deep. */
    sj_doc *doc = NULL;
    int prc = sj_parse(json, len, 2 * p.max_depth + 2, &doc);
    if (prc == TFTAP_ENOMEM) {
        dec_error_set(err, prc, "", "out of memory");
        return prc;
    }
    if (prc == TFTAP_ELIMIT) {
        dec_error_set(err, TFTAP_ELIMIT, "", "type nested deeper than %u levels", p.max_depth);
        return TFTAP_ELIMIT;
    }
    if (prc) {
        dec_error_set(err, TFTAP_EDECODE, "", "invalid type: not valid JSON");
        return TFTAP_EDECODE;
    }
    const sj_node *j = sj_root(doc);
    p.steps = calloc((size_t)p.max_depth + 1, sizeof *p.steps);
    int rc = p.steps ? parse_node(&p, j, out) : TFTAP_ENOMEM;
    if (rc == TFTAP_ENOMEM)
        dec_error_set(err, rc, "", "out of memory");
    free(p.steps);
    sj_free(doc);
    return rc;
}

void dec_type_to_json(const dec_type *t, tftap_buf *out)
{
    switch (t->kind) {
    case DEC_STRING:
        tftap_buf_puts(out, "\"string\"");
        return;
    case DEC_NUMBER:
        tftap_buf_puts(out, "\"number\"");
        return;
    case DEC_BOOL:
        tftap_buf_puts(out, "\"bool\"");
        return;
    case DEC_DYNAMIC:
        tftap_buf_puts(out, "\"dynamic\"");
        return;
    case DEC_LIST:
    case DEC_SET:
    case DEC_MAP:
        tftap_buf_puts(out, t->kind == DEC_LIST  ? "[\"list\","
                            : t->kind == DEC_SET ? "[\"set\","
                                                 : "[\"map\",");
        dec_type_to_json(t->elem, out);
        tftap_buf_putc(out, ']');
        return;
    case DEC_TUPLE:
        tftap_buf_puts(out, "[\"tuple\",[");
        for (size_t i = 0; i < t->n; i++) {
            if (i)
                tftap_buf_putc(out, ',');
            dec_type_to_json(t->elems[i], out);
        }
        tftap_buf_puts(out, "]]");
        return;
    case DEC_OBJECT: {
        tftap_buf_puts(out, "[\"object\",{");
        int any_optional = 0;
        for (size_t i = 0; i < t->n; i++) {
            if (i)
                tftap_buf_putc(out, ',');
            tftap_buf_json_string(out, t->attrs[i].name, t->attrs[i].name_len);
            tftap_buf_putc(out, ':');
            dec_type_to_json(t->attrs[i].type, out);
            any_optional |= t->attrs[i].optional;
        }
        tftap_buf_putc(out, '}');
        if (any_optional) {
            tftap_buf_puts(out, ",[");
            int first = 1;
            for (size_t i = 0; i < t->n; i++) {
                if (!t->attrs[i].optional)
                    continue;
                if (!first)
                    tftap_buf_putc(out, ',');
                first = 0;
                tftap_buf_json_string(out, t->attrs[i].name, t->attrs[i].name_len);
            }
            tftap_buf_putc(out, ']');
        }
        tftap_buf_putc(out, ']');
        return;
    }
    }
}
