/* analysis: recorded values written as `mock_provider` blocks for
 * `tofu test`. What OpenTofu accepts in a mock's `defaults` follows its
 * MockValueComposer (internal/configs/hcl2shim/mock_value_composer.go):
 * the object is read with no variables and no functions (literals only);
 * an attribute that is not computed, or that the configuration sets, is an
 * error; a key the schema does not have is an error; a nested block takes
 * an object (applied to each of its blocks) and only when the
 * configuration has that block; a computed attribute's value is converted
 * to its type. */
#include "analysis/analysis.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis_int.h"

/* ---- HCL literals -----------------------------------------------------------------------------
 */

void analysis_hcl_string(const char *s, size_t n, tftap_buf *out)
{
    const unsigned char *p = (const unsigned char *)s;
    tftap_buf_putc(out, '"');
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        switch (c) {
        case '"':
            tftap_buf_puts(out, "\\\"");
            i++;
            continue;
        case '\\':
            tftap_buf_puts(out, "\\\\");
            i++;
            continue;
        case '\n':
            tftap_buf_puts(out, "\\n");
            i++;
            continue;
        case '\r':
            tftap_buf_puts(out, "\\r");
            i++;
            continue;
        case '\t':
            tftap_buf_puts(out, "\\t");
            i++;
            continue;
        case '$':
        case '%':
            /* A quoted string is a template: "${" and "%{" would start an
             * interpolation or a directive; doubling the sign is the
             * escape. */
            if (i + 1 < n && p[i + 1] == '{') {
                tftap_buf_putc(out, (char)c);
                tftap_buf_putc(out, (char)c);
                tftap_buf_putc(out, '{');
                i += 2;
                continue;
            }
            tftap_buf_putc(out, (char)c);
            i++;
            continue;
        default:
            break;
        }
        if (c < 0x20 || c == 0x7f) {
            tftap_buf_printf(out, "\\u%04x", c);
            i++;
            continue;
        }
        size_t len = tftap_utf8_len(p + i, n - i);
        if (len == 0) {
            /* The decoder writes valid UTF-8 only; a database from elsewhere
             * may not, and HCL refuses a file that is not. */
            tftap_buf_puts(out, "\\ufffd");
            i++;
            continue;
        }
        tftap_buf_append(out, p + i, len);
        i += len;
    }
    tftap_buf_putc(out, '"');
}

/* An object key that HCL reads as the same string when written bare: an
 * identifier that is none of the keywords the expression parser takes
 * first ("null" would be a null key, "for" a for expression). */
static int bare_key(const char *k, size_t n)
{
    static const char *const keywords[] = {"true", "false", "null", "for", "in", "if"};
    if (n == 0 || !((k[0] >= 'a' && k[0] <= 'z') || (k[0] >= 'A' && k[0] <= 'Z') || k[0] == '_'))
        return 0;
    for (size_t i = 1; i < n; i++) {
        char c = k[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return 0;
    }
    for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
        if (strlen(keywords[i]) == n && memcmp(keywords[i], k, n) == 0)
            return 0;
    return 1;
}

static void put_key(const char *k, size_t n, tftap_buf *out)
{
    if (bare_key(k, n))
        tftap_buf_append(out, k, n);
    else
        analysis_hcl_string(k, n, out);
}

static void put_indent(int n, tftap_buf *out)
{
    for (int i = 0; i < n; i++)
        tftap_buf_putc(out, ' ');
}

static int str_is(const sj_node *n, const char *s)
{
    return n && n->kind == SJ_STRING && n->len == strlen(s) && memcmp(n->str, s, n->len) == 0;
}

static int cmp_member(const void *a, const void *b)
{
    const sj_node *x = *(const sj_node *const *)a, *y = *(const sj_node *const *)b;
    return tftap_bytes_cmp(x->key, x->key_len, y->key, y->key_len);
}

/* An object's members in byte order of their keys (caller frees). */
static int sorted_members(const sj_node *obj, const sj_node ***out)
{
    *out = NULL;
    if (obj->n == 0)
        return 0;
    const sj_node **v = malloc(obj->n * sizeof *v);
    if (!v)
        return TFTAP_ENOMEM;
    size_t i = 0;
    for (const sj_node *c = obj->child; c && i < obj->n; c = c->next)
        v[i++] = c;
    qsort(v, i, sizeof *v, cmp_member);
    *out = v;
    return 0;
}

static int scalar(const sj_node *n)
{
    return n->kind != SJ_ARRAY && n->kind != SJ_OBJECT;
}

/* Object members as lines "KEY = VALUE", aligned the way `tofu fmt`
 * aligns them: within each run of one-line members, every "=" in the
 * column after the longest key (multi-line values end a run). */
struct members {
    struct member {
        tftap_buf key, value;
    } * v;
    size_t n, cap;
};

static void members_done(struct members *m)
{
    for (size_t i = 0; i < m->n; i++) {
        tftap_buf_done(&m->v[i].key);
        tftap_buf_done(&m->v[i].value);
    }
    free(m->v);
    m->v = NULL;
    m->n = m->cap = 0;
}

/* A new member whose key is written now; its value goes into the returned
 * buffer. NULL: out of memory. */
static tftap_buf *members_add(struct members *m, const char *key, size_t klen)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 8;
        struct member *v = realloc(m->v, cap * sizeof *v);
        if (!v)
            return NULL;
        m->v = v;
        m->cap = cap;
    }
    struct member *e = &m->v[m->n++];
    e->key = (tftap_buf)TFTAP_BUF_INIT;
    e->value = (tftap_buf)TFTAP_BUF_INIT;
    put_key(key, klen, &e->key);
    return &e->value;
}

/* Columns a key takes: one per character (UTF-8 continuation bytes take none). */
static size_t columns(const tftap_buf *b)
{
    size_t n = 0;
    for (size_t i = 0; i < b->len; i++)
        n += ((unsigned char)b->data[i] & 0xc0) != 0x80;
    return n;
}

static int members_write(const struct members *m, int indent, tftap_buf *out)
{
    for (size_t i = 0; i < m->n;) {
        size_t j = i, width = 0;
        while (j < m->n && !memchr(m->v[j].value.data, '\n', m->v[j].value.len)) {
            size_t w = columns(&m->v[j].key);
            width = w > width ? w : width;
            j++;
        }
        if (j == i) /* a multi-line value: a run of its own */
            j = i + 1;
        for (size_t k = i; k < j; k++) {
            put_indent(indent, out);
            tftap_buf_append(out, m->v[k].key.data, m->v[k].key.len);
            put_indent(j - i > 1 || width ? (int)(width - columns(&m->v[k].key)) : 0, out);
            tftap_buf_puts(out, " = ");
            tftap_buf_append(out, m->v[k].value.data, m->v[k].value.len);
            tftap_buf_putc(out, '\n');
        }
        i = j;
    }
    for (size_t i = 0; i < m->n; i++)
        if (tftap_buf_failed(&m->v[i].key) || tftap_buf_failed(&m->v[i].value))
            return TFTAP_ENOMEM;
    return tftap_buf_failed(out) ? TFTAP_ENOMEM : 0;
}

static int hcl_value(const sj_node *v, struct analysis_hint h, int indent, unsigned depth,
                     tftap_buf *out)
{
    if (depth > ANALYSIS_JSON_MAX_DEPTH)
        return TFTAP_ELIMIT;
    if (sj_is_unknown(v) || sj_is_sensitive(v))
        return TFTAP_EINVAL;
    if (str_is(h.ty, "dynamic") && v->kind == SJ_OBJECT) {
        /* Its type travels with it: the value is what HCL writes. */
        const sj_node *t = sj_get(v, "type"), *inner = sj_get(v, "value");
        if (!t || !inner)
            return TFTAP_EDECODE;
        struct analysis_hint ih = {t, NULL, NULL};
        return hcl_value(inner, ih, indent, depth + 1, out);
    }
    switch (v->kind) {
    case SJ_NULL:
        tftap_buf_puts(out, "null");
        return 0;
    case SJ_BOOL:
        tftap_buf_puts(out, v->boolean ? "true" : "false");
        return 0;
    case SJ_NUMBER:
        /* JSON's number grammar is HCL's (a sign reads as negation), and
         * OpenTofu parses the digits exactly. */
        tftap_buf_append(out, v->str, v->len);
        return 0;
    case SJ_STRING:
        if (str_is(h.ty, "number"))
            return TFTAP_EINVAL; /* "Infinity": HCL has no literal for it */
        analysis_hcl_string(v->str, v->len, out);
        return 0;
    case SJ_ARRAY: {
        int inline_ = 1;
        for (const sj_node *c = v->child; c; c = c->next)
            inline_ &= scalar(c);
        if (v->n == 0) {
            tftap_buf_puts(out, "[]");
            return 0;
        }
        tftap_buf_putc(out, '[');
        if (!inline_)
            tftap_buf_putc(out, '\n');
        size_t i = 0;
        for (const sj_node *c = v->child; c; c = c->next, i++) {
            if (inline_ && i)
                tftap_buf_puts(out, ", ");
            if (!inline_)
                put_indent(indent + 2, out);
            int rc = hcl_value(c, analysis_hint_elem(&h, i), indent + 2, depth + 1, out);
            if (rc)
                return rc;
            if (!inline_)
                tftap_buf_puts(out, ",\n");
        }
        if (!inline_)
            put_indent(indent, out);
        tftap_buf_putc(out, ']');
        return 0;
    }
    case SJ_OBJECT: {
        if (v->n == 0) {
            tftap_buf_puts(out, "{}");
            return 0;
        }
        const sj_node **m;
        struct members lines = {NULL, 0, 0};
        int rc = sorted_members(v, &m);
        if (rc)
            return rc;
        tftap_buf_puts(out, "{\n");
        for (size_t i = 0; i < v->n && !rc; i++) {
            tftap_buf *val = members_add(&lines, m[i]->key, m[i]->key_len);
            rc = val ? hcl_value(m[i], analysis_hint_member(&h, m[i]->key, m[i]->key_len),
                                 indent + 2, depth + 1, val)
                     : TFTAP_ENOMEM;
        }
        free(m);
        if (!rc)
            rc = members_write(&lines, indent + 2, out);
        members_done(&lines);
        if (rc)
            return rc;
        put_indent(indent, out);
        tftap_buf_putc(out, '}');
        return 0;
    }
    }
    return TFTAP_EDECODE;
}

int analysis_hcl_value(const char *json, size_t len, const char *type_json, int indent,
                       tftap_buf *out)
{
    sj_doc *vd = NULL, *td = NULL;
    int rc = sj_parse(json, len, ANALYSIS_JSON_MAX_DEPTH, &vd);
    if (!rc && type_json)
        rc = sj_parse(type_json, strlen(type_json), ANALYSIS_JSON_MAX_DEPTH, &td);
    if (rc == TFTAP_ELIMIT)
        rc = TFTAP_EDECODE;
    if (!rc) {
        struct analysis_hint h = {td ? sj_root(td) : NULL, NULL, NULL};
        rc = hcl_value(sj_root(vd), h, indent, 0, out);
        if (rc == TFTAP_ELIMIT)
            rc = TFTAP_EDECODE;
    }
    if (!rc && tftap_buf_failed(out))
        rc = TFTAP_ENOMEM;
    sj_free(vd);
    sj_free(td);
    return rc;
}

/* ---- mock blocks ------------------------------------------------------------------------------
 */

struct mock_value {
    char *provider, *type_name, *address, *rpc, *block_schema, *value, *config;
    int data, config_only, rank;
    int64_t call_id;
};

struct analysis_mocks {
    struct mock_value *v;
    size_t n, cap;
};

int analysis_mocks_new(analysis_mocks **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : TFTAP_ENOMEM;
}

static void value_done(struct mock_value *v)
{
    free(v->provider);
    free(v->type_name);
    free(v->address);
    free(v->rpc);
    free(v->block_schema);
    free(v->value);
    free(v->config);
}

void analysis_mocks_free(analysis_mocks *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++)
        value_done(&m->v[i]);
    free(m->v);
    free(m);
}

static int dup(const char *s, char **out)
{
    *out = NULL;
    if (!s)
        return 0;
    *out = strdup(s);
    return *out ? 0 : TFTAP_ENOMEM;
}

/* Applied states first, then refreshed ones, then plans. */
static int rank_of(const char *rpc)
{
    if (!rpc)
        return 3;
    if (strcmp(rpc, "ApplyResourceChange") == 0 || strcmp(rpc, "ReadDataSource") == 0)
        return 0;
    if (strcmp(rpc, "ReadResource") == 0)
        return 1;
    return 2;
}

int analysis_mocks_add(analysis_mocks *m, const analysis_mock_value *in)
{
    if (!in->type_name)
        return 0;
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 32;
        struct mock_value *v = realloc(m->v, cap * sizeof *v);
        if (!v)
            return TFTAP_ENOMEM;
        m->v = v;
        m->cap = cap;
    }
    struct mock_value *v = &m->v[m->n];
    memset(v, 0, sizeof *v);
    int rc = dup(in->provider, &v->provider);
    if (!rc)
        rc = dup(in->type_name, &v->type_name);
    if (!rc)
        rc = dup(in->address, &v->address);
    if (!rc)
        rc = dup(in->rpc, &v->rpc);
    if (!rc)
        rc = dup(in->block_schema, &v->block_schema);
    if (!rc)
        rc = dup(in->value, &v->value);
    if (!rc)
        rc = dup(in->config, &v->config);
    if (rc) {
        value_done(v);
        return rc;
    }
    v->data = in->data;
    v->config_only = in->config_only;
    v->rank = rank_of(in->rpc);
    v->call_id = in->call_id;
    m->n++;
    return 0;
}

static int cmp_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

/* Provider, resources before data sources, type; then the value the
 * defaults come from first: best rank, an address before none, addresses
 * in byte order, the latest call. */
static int cmp_value(const void *a, const void *b)
{
    const struct mock_value *x = a, *y = b;
    int c = cmp_str(x->provider, y->provider);
    if (c)
        return c;
    if (x->data != y->data)
        return x->data - y->data;
    if ((c = cmp_str(x->type_name, y->type_name)))
        return c;
    if (x->rank != y->rank)
        return x->rank - y->rank;
    if (!x->address != !y->address)
        return x->address ? -1 : 1;
    if ((c = cmp_str(x->address, y->address)))
        return c;
    return x->call_id > y->call_id ? -1 : x->call_id < y->call_id;
}

/* The name `tofu test` knows the provider by: the type of its address
 * (OpenTofu looks mocks up by it). */
static void provider_label(const struct mock_value *v, tftap_buf *out)
{
    const char *p = v->provider;
    if (p && *p) {
        const char *slash = strrchr(p, '/');
        tftap_buf_puts(out, slash ? slash + 1 : p);
        return;
    }
    const char *t = v->type_name, *us = strchr(t, '_');
    tftap_buf_append(out, t, us ? (size_t)(us - t) : strlen(t));
}

/* Text for a comment: one line, no control characters, UTF-8 (addresses
 * and provider names come from a database someone else may have written). */
static void comment_text(const char *s, tftap_buf *out)
{
    size_t n = s ? strlen(s) : 0;
    for (size_t i = 0; i < n;) {
        size_t len = tftap_utf8_len((const unsigned char *)s + i, n - i);
        if (len == 0 || (unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
            tftap_buf_putc(out, '?');
            i++;
        } else {
            tftap_buf_append(out, s + i, len);
            i += len;
        }
    }
}

struct render {
    tftap_buf *notes; /* "# ..." lines about what was left out */
    const char *prefix;
};

/* Whether a node holds an unknown or a redacted value anywhere. */
static int holds(const sj_node *n, int (*pred)(const sj_node *))
{
    if (pred(n))
        return 1;
    if (n->kind == SJ_ARRAY || n->kind == SJ_OBJECT)
        for (const sj_node *c = n->child; c; c = c->next)
            if (holds(c, pred))
                return 1;
    return 0;
}

static int flag(const sj_node *obj, const char *key)
{
    const sj_node *n = sj_get(obj, key);
    return n && n->kind == SJ_BOOL && n->boolean;
}

/* A sensitive or write-only attribute anywhere in a nested type. */
static int nested_sensitive(const sj_node *attr, unsigned depth)
{
    if (flag(attr, "sensitive") || flag(attr, "write_only"))
        return 1;
    const sj_node *at = sj_get(sj_get(attr, "nested_type"), "attributes");
    if (depth > 64 || !at || at->kind != SJ_ARRAY)
        return depth > 64;
    for (const sj_node *a = at->child; a; a = a->next)
        if (nested_sensitive(a, depth + 1))
            return 1;
    return 0;
}

/* Notes go above `defaults`: a comment line inside the object would end
 * the run of aligned members. */
static void note(struct render *r, const char *name, size_t nlen, const char *why)
{
    put_indent(4, r->notes);
    tftap_buf_puts(r->notes, "# ");
    (void)nlen; /* a name with a NUL byte is cut there: it is only a comment */
    comment_text(r->prefix, r->notes);
    comment_text(name, r->notes);
    tftap_buf_puts(r->notes, ": ");
    tftap_buf_puts(r->notes, why);
    tftap_buf_putc(r->notes, '\n');
}

static int cmp_name(const void *a, const void *b)
{
    const sj_node *x = *(const sj_node *const *)a, *y = *(const sj_node *const *)b;
    /* Attributes have a name, block types a type_name. */
    const sj_node *nx = sj_get(x, "name"), *ny = sj_get(y, "name");
    if (!nx)
        nx = sj_get(x, "type_name");
    if (!ny)
        ny = sj_get(y, "type_name");
    int sx = nx && nx->kind == SJ_STRING, sy = ny && ny->kind == SJ_STRING;
    return tftap_bytes_cmp(sx ? nx->str : NULL, sx ? nx->len : 0, sy ? ny->str : NULL,
                           sy ? ny->len : 0);
}

/* The elements of an array schema list sorted by their names. */
static int sorted_items(const sj_node *arr, const sj_node ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!arr || arr->kind != SJ_ARRAY || arr->n == 0)
        return 0;
    const sj_node **v = malloc(arr->n * sizeof *v);
    if (!v)
        return TFTAP_ENOMEM;
    size_t i = 0;
    for (const sj_node *c = arr->child; c && i < arr->n; c = c->next)
        if (c->kind == SJ_OBJECT)
            v[i++] = c;
    qsort(v, i, sizeof *v, cmp_name);
    *out = v;
    *n = i;
    return 0;
}

static const sj_node *member_named(const sj_node *obj, const sj_node *name)
{
    if (!obj || obj->kind != SJ_OBJECT || !name || name->kind != SJ_STRING)
        return NULL;
    return sj_get_n(obj, name->str, name->len);
}

static int is_empty(const sj_node *n)
{
    return !n || n->kind == SJ_NULL || ((n->kind == SJ_ARRAY || n->kind == SJ_OBJECT) && n->n == 0);
}

/* A block's body of defaults: value is the recorded object of the block,
 * configs the configuration objects it is applied to (every instance of
 * the type, or every nested block). Appends "NAME = VALUE" lines to body. */
static int render_block(struct render *r, const sj_node *schema, const sj_node *value,
                        const sj_node *const *configs, size_t nconfigs, int indent, unsigned depth,
                        tftap_buf *body)
{
    const sj_node **attrs = NULL, **blocks = NULL;
    size_t nattrs = 0, nblocks = 0;
    const sj_node **sub = NULL;
    struct members lines = {NULL, 0, 0};
    tftap_buf text = TFTAP_BUF_INIT;
    int rc = depth > 64 ? TFTAP_EDECODE : 0;
    if (!rc)
        rc = sorted_items(sj_get(schema, "attributes"), &attrs, &nattrs);
    if (!rc)
        rc = sorted_items(sj_get(schema, "block_types"), &blocks, &nblocks);
    for (size_t i = 0; i < nattrs && !rc; i++) {
        const sj_node *a = attrs[i], *name = sj_get(a, "name");
        if (!name || name->kind != SJ_STRING || !flag(a, "computed"))
            continue; /* only computed attributes take defaults */
        const sj_node *v = member_named(value, name);
        if (!v)
            continue;
        int configured = 0;
        for (size_t c = 0; c < nconfigs && !configured; c++) {
            const sj_node *cv = member_named(configs[c], name);
            configured = cv && cv->kind != SJ_NULL;
        }
        if (configured) {
            note(r, name->str, name->len,
                 "set in the configuration, which tofu test uses (a default for it is refused)");
            continue;
        }
        if (nested_sensitive(a, 0) || holds(v, sj_is_sensitive)) {
            note(r, name->str, name->len, "sensitive, never written");
            continue;
        }
        if (holds(v, sj_is_unknown)) {
            note(r, name->str, name->len, "unknown in the recorded plan");
            continue;
        }
        tftap_buf_reset(&text);
        rc = hcl_value(v, analysis_hint_of_attr(a), indent, depth + 1, &text);
        if (rc == TFTAP_EINVAL || rc == TFTAP_ELIMIT) {
            note(r, name->str, name->len, "a value HCL cannot write (infinity)");
            rc = 0;
            continue;
        }
        if (rc)
            break;
        tftap_buf *val = members_add(&lines, name->str, name->len);
        if (!val) {
            rc = TFTAP_ENOMEM;
            break;
        }
        tftap_buf_append(val, text.data, text.len);
    }
    for (size_t i = 0; i < nblocks && !rc; i++) {
        const sj_node *bt = blocks[i], *name = sj_get(bt, "type_name"),
                      *nest = sj_get(bt, "nesting");
        const sj_node *inner = sj_get(bt, "block");
        if (!name || name->kind != SJ_STRING || !inner)
            continue;
        int multi = str_is(nest, "LIST") || str_is(nest, "SET") || str_is(nest, "MAP");
        /* Defaults for a block the configuration lacks are refused. */
        size_t nsub = 0, cap = 0;
        int everywhere = nconfigs > 0;
        for (size_t c = 0; c < nconfigs && everywhere; c++) {
            const sj_node *cv = member_named(configs[c], name);
            if (is_empty(cv) || holds(cv, sj_is_unknown))
                everywhere = 0;
            else
                cap += multi ? cv->n : 1;
        }
        const sj_node *v = member_named(value, name);
        if (!everywhere || is_empty(v) || holds(v, sj_is_unknown) || holds(v, sj_is_sensitive))
            continue;
        sub = malloc(cap * sizeof *sub);
        if (!sub) {
            rc = TFTAP_ENOMEM;
            break;
        }
        for (size_t c = 0; c < nconfigs; c++) {
            const sj_node *cv = member_named(configs[c], name);
            if (multi)
                for (const sj_node *e = cv->child; e && nsub < cap; e = e->next)
                    sub[nsub++] = e;
            else if (nsub < cap)
                sub[nsub++] = cv;
        }
        /* One object serves every block: the first recorded one's. */
        const sj_node *first = v;
        if (str_is(nest, "MAP")) {
            const sj_node **m;
            rc = sorted_members(v, &m);
            if (rc)
                break;
            first = m ? m[0] : NULL;
            free(m);
        } else if (multi) {
            first = v->child;
        }
        if (!first || first->kind != SJ_OBJECT) {
            free(sub);
            sub = NULL;
            continue;
        }
        tftap_buf inner_body = TFTAP_BUF_INIT;
        tftap_buf prefix = TFTAP_BUF_INIT;
        tftap_buf_puts(&prefix, r->prefix);
        tftap_buf_append(&prefix, name->str, name->len);
        tftap_buf_puts(&prefix, ".");
        struct render rr = {r->notes, tftap_buf_cstr(&prefix)};
        rc = render_block(&rr, inner, first, sub, nsub, indent + 2, depth + 1, &inner_body);
        if (!rc && inner_body.len) {
            if (multi && v->n > 1)
                note(r, name->str, name->len,
                     "the defaults of every block come from the first recorded one");
            tftap_buf *val = members_add(&lines, name->str, name->len);
            if (val) {
                tftap_buf_puts(val, "{\n");
                tftap_buf_append(val, inner_body.data, inner_body.len);
                put_indent(indent, val);
                tftap_buf_putc(val, '}');
            } else {
                rc = TFTAP_ENOMEM;
            }
        }
        tftap_buf_done(&inner_body);
        tftap_buf_done(&prefix);
        free(sub);
        sub = NULL;
    }
    if (!rc)
        rc = members_write(&lines, indent, body);
    members_done(&lines);
    if (!rc && (tftap_buf_failed(body) || tftap_buf_failed(r->notes) || tftap_buf_failed(&text)))
        rc = TFTAP_ENOMEM;
    tftap_buf_done(&text);
    free(attrs);
    free(blocks);
    return rc;
}

/* One mock_resource/mock_data block for values v[0..n) of one type, sorted
 * with the preferred value first. */
static int render_type(const struct mock_value *v, size_t n, tftap_buf *out, size_t *ntypes)
{
    const struct mock_value *chosen = NULL;
    size_t nconfigs = 0;
    sj_doc **docs = calloc(n * 2 + 1, sizeof *docs);
    const sj_node **configs = calloc(n + 1, sizeof *configs);
    tftap_buf body = TFTAP_BUF_INIT, notes = TFTAP_BUF_INIT;
    int rc = docs && configs ? 0 : TFTAP_ENOMEM;
    const sj_node *value = NULL, *schema = NULL;
    for (size_t i = 0; i < n && !rc; i++) {
        if (v[i].config) {
            rc = sj_parse(v[i].config, strlen(v[i].config), ANALYSIS_JSON_MAX_DEPTH, &docs[2 * i]);
            if (!rc && sj_root(docs[2 * i])->kind == SJ_OBJECT)
                configs[nconfigs++] = sj_root(docs[2 * i]);
        }
        if (!rc && !chosen && !v[i].config_only && v[i].value && v[i].block_schema) {
            rc =
                sj_parse(v[i].value, strlen(v[i].value), ANALYSIS_JSON_MAX_DEPTH, &docs[2 * i + 1]);
            if (!rc && sj_root(docs[2 * i + 1])->kind == SJ_OBJECT) {
                chosen = &v[i];
                value = sj_root(docs[2 * i + 1]);
            }
        }
    }
    if (!rc && chosen)
        rc = sj_parse(chosen->block_schema, strlen(chosen->block_schema), ANALYSIS_JSON_MAX_DEPTH,
                      &docs[2 * n]);
    if (!rc && chosen) {
        schema = sj_root(docs[2 * n]);
        struct render r = {&notes, ""};
        rc = render_block(&r, schema, value, configs, nconfigs, 6, 0, &body);
    }
    if (rc == TFTAP_ELIMIT)
        rc = TFTAP_EDECODE;
    if (!rc && chosen) {
        tftap_buf_printf(out, "\n  %s ", chosen->data ? "mock_data" : "mock_resource");
        analysis_hcl_string(chosen->type_name, strlen(chosen->type_name), out);
        tftap_buf_puts(out, " {\n    # defaults from ");
        comment_text(chosen->address ? chosen->address : "an instance with no known address", out);
        tftap_buf_printf(out, " (%s, call %lld)\n", chosen->rpc ? chosen->rpc : "?",
                         (long long)chosen->call_id);
        /* Other instances whose values differ get these defaults too. */
        size_t others = 0, listed = 0;
        const char *last = chosen->address;
        for (size_t i = 0; i < n; i++) {
            const struct mock_value *o = &v[i];
            if (o->config_only || !o->value || !o->address || o->rank != chosen->rank ||
                (last && strcmp(o->address, last) == 0) || o == chosen)
                continue;
            last = o->address;
            if (strcmp(o->value, chosen->value) == 0)
                continue;
            tftap_buf_puts(out, others ? ", " : "    # recorded with other values too: ");
            if (listed < 5) {
                comment_text(o->address, out);
                listed++;
            } else if (listed == 5) {
                tftap_buf_puts(out, "...");
                listed++;
            }
            others++;
        }
        if (others)
            tftap_buf_printf(out, " (%zu; tofu test gives every instance these defaults)\n",
                             others);
        tftap_buf_append(out, notes.data, notes.len);
        if (body.len) {
            tftap_buf_puts(out, "    defaults = {\n");
            tftap_buf_append(out, body.data, body.len);
            tftap_buf_puts(out, "    }\n");
        } else {
            tftap_buf_puts(out, "    defaults = {}\n");
        }
        tftap_buf_puts(out, "  }\n");
        if (ntypes)
            (*ntypes)++;
    }
    if (!rc && (tftap_buf_failed(&body) || tftap_buf_failed(&notes)))
        rc = TFTAP_ENOMEM;
    for (size_t i = 0; docs && i < n * 2 + 1; i++)
        sj_free(docs[i]);
    free(docs);
    free(configs);
    tftap_buf_done(&body);
    tftap_buf_done(&notes);
    return rc;
}

int analysis_mocks_render(analysis_mocks *m, int64_t run, tftap_buf *out, size_t *ntypes)
{
    int rc = 0;
    if (ntypes)
        *ntypes = 0;
    if (m->n)
        qsort(m->v, m->n, sizeof *m->v, cmp_value);
    tftap_buf_puts(out, "# Mocks for tofu test");
    if (run)
        tftap_buf_printf(out, " from the values recorded in tftap run %lld", (long long)run);
    tftap_buf_puts(out, ".\n"
                        "# defaults hold only computed attributes the configuration does not set\n"
                        "# (tofu test refuses the others); sensitive values are never written.\n");
    tftap_buf label = TFTAP_BUF_INIT, prev = TFTAP_BUF_INIT;
    for (size_t i = 0; i < m->n && !rc;) {
        size_t j = i;
        int asked = 0; /* a value of this provider's kept (not only a configuration) */
        while (j < m->n && cmp_str(m->v[j].provider, m->v[i].provider) == 0)
            asked |= !m->v[j++].config_only;
        if (!asked) {
            /* Nothing of it was asked for (ADDRESS or TYPE named another's):
             * no empty block. */
            i = j;
            continue;
        }
        tftap_buf_reset(&label);
        provider_label(&m->v[i], &label);
        tftap_buf_puts(out, "\nmock_provider ");
        analysis_hcl_string(label.data, label.len, out);
        tftap_buf_puts(out, " {\n  # ");
        comment_text(m->v[i].provider ? m->v[i].provider : "provider address not recorded", out);
        tftap_buf_puts(out, "\n  # a provider configuration with an alias needs a copy of this "
                            "block with alias = \"NAME\"\n");
        if (prev.len && label.len == prev.len && memcmp(label.data, prev.data, label.len) == 0)
            tftap_buf_puts(out, "  # another provider above has the same type: tofu test "
                                "tells them apart by alias only\n");
        tftap_buf_reset(&prev);
        tftap_buf_append(&prev, label.data, label.len);
        for (size_t k = i; k < j && !rc;) {
            size_t e = k;
            while (e < j && m->v[e].data == m->v[k].data &&
                   strcmp(m->v[e].type_name, m->v[k].type_name) == 0)
                e++;
            rc = render_type(&m->v[k], e - k, out, ntypes);
            k = e;
        }
        tftap_buf_puts(out, "}\n");
        i = j;
    }
    if (!rc && (tftap_buf_failed(out) || tftap_buf_failed(&label) || tftap_buf_failed(&prev)))
        rc = TFTAP_ENOMEM;
    tftap_buf_done(&label);
    tftap_buf_done(&prev);
    return rc;
}
