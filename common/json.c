/* common: the JSON reader for decoded values. cJSON would turn numbers
 * into doubles; decoded values carry exact numbers, so this one keeps each
 * number's text. Input is our own database's JSON or `tofu show -json`
 * output, both bounded by the caller; nesting is bounded here. */
#include "common/common.h"

#include <stdlib.h>
#include <string.h>

struct sj_doc {
    sj_node *root;
    /* Nodes and strings come from a list of chunks freed at once. */
    struct chunk {
        struct chunk *next;
        size_t used, cap;
        unsigned char mem[];
    } * chunks;
};

struct parser {
    sj_doc *doc;
    const char *p, *end;
    unsigned depth, max_depth;
    int err;
};

static void *arena_alloc(sj_doc *d, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (!d->chunks || d->chunks->cap - d->chunks->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        struct chunk *c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->next = d->chunks;
        c->used = 0;
        c->cap = cap;
        d->chunks = c;
    }
    void *p = d->chunks->mem + d->chunks->used;
    d->chunks->used += n;
    return p;
}

static void skip_ws(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static int read_hex4(struct parser *ps, unsigned *out)
{
    if (ps->end - ps->p < 4)
        return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = tftap_hex_digit((unsigned char)ps->p[i]);
        if (h < 0)
            return -1;
        v = v << 4 | (unsigned)h;
    }
    ps->p += 4;
    *out = v;
    return 0;
}

static char *put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        *o++ = (char)cp;
    } else if (cp < 0x800) {
        *o++ = (char)(0xc0 | cp >> 6);
        *o++ = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        *o++ = (char)(0xe0 | cp >> 12);
        *o++ = (char)(0x80 | (cp >> 6 & 0x3f));
        *o++ = (char)(0x80 | (cp & 0x3f));
    } else {
        *o++ = (char)(0xf0 | cp >> 18);
        *o++ = (char)(0x80 | (cp >> 12 & 0x3f));
        *o++ = (char)(0x80 | (cp >> 6 & 0x3f));
        *o++ = (char)(0x80 | (cp & 0x3f));
    }
    return o;
}

/* At a backslash, with the string ending at end: past one escape (a
 * surrogate pair taken as one), its code point in *cp; -1 for what JSON
 * does not allow (an unknown escape, a surrogate alone). */
static int escape(struct parser *ps, const char *end, unsigned *cp)
{
    ps->p++;
    if (ps->p >= end)
        return -1;
    char c = *ps->p++;
    switch (c) {
    case 'n':
        *cp = '\n';
        return 0;
    case 't':
        *cp = '\t';
        return 0;
    case 'r':
        *cp = '\r';
        return 0;
    case 'b':
        *cp = '\b';
        return 0;
    case 'f':
        *cp = '\f';
        return 0;
    case '"':
    case '\\':
    case '/':
        *cp = (unsigned char)c;
        return 0;
    case 'u':
        break;
    default:
        return -1;
    }
    if (end - ps->p < 4 || read_hex4(ps, cp))
        return -1;
    if (*cp >= 0xdc00 && *cp < 0xe000)
        return -1; /* a low surrogate alone */
    if (*cp >= 0xd800 && *cp < 0xdc00) {
        unsigned lo;
        if (end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u')
            return -1; /* a high surrogate alone */
        ps->p += 2;
        if (read_hex4(ps, &lo) || lo < 0xdc00 || lo >= 0xe000)
            return -1;
        *cp = 0x10000 + ((*cp - 0xd800) << 10) + (lo - 0xdc00);
    }
    return 0;
}

/* At the opening quote: past the closing one, *end at it; *escaped says
 * whether any escape lies between (each checked). -1 if the text ends
 * first or holds a raw control character or an escape JSON does not allow. */
static int scan_string(struct parser *ps, const char **end, int *escaped)
{
    ps->p++;
    *escaped = 0;
    for (;;) {
        ps->p += tftap_json_plain_len(ps->p, (size_t)(ps->end - ps->p), 0);
        if (ps->p >= ps->end)
            return -1;
        if (*ps->p == '"')
            break;
        unsigned cp;
        if (*ps->p != '\\' || escape(ps, ps->end, &cp))
            return -1; /* JSON allows no raw control character */
        *escaped = 1;
    }
    *end = ps->p++;
    return 0;
}

/* Unescape raw[0..n), checked by scan_string, into o (n + 1 bytes
 * suffice: unescaping never grows the text); the length written. */
static size_t unescape(const char *raw, size_t n, char *o)
{
    struct parser ps = {NULL, raw, raw + n, 0, 0, 0};
    char *o0 = o;
    while (ps.p < ps.end) {
        if (*ps.p != '\\') {
            *o++ = *ps.p++;
            continue;
        }
        unsigned cp = 0;
        (void)escape(&ps, ps.end, &cp);
        o = put_utf8(o, cp);
    }
    *o = '\0';
    return (size_t)(o - o0);
}

/* At the opening quote; unescaped text goes to the arena. */
static int parse_string(struct parser *ps, const char **s, size_t *len)
{
    const char *start = ps->p + 1, *end;
    int escaped;
    if (scan_string(ps, &end, &escaped))
        return -1;
    size_t raw = (size_t)(end - start);
    char *o = arena_alloc(ps->doc, raw + 1);
    if (!o)
        return -1;
    if (escaped) {
        *len = unescape(start, raw, o);
    } else {
        memcpy(o, start, raw);
        o[raw] = '\0';
        *len = raw;
    }
    *s = o;
    return 0;
}

static sj_node *parse_value(struct parser *ps);

static int is_digit(const struct parser *ps)
{
    return ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9';
}

/* -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, as RFC 8259 has it. */
static int scan_number(struct parser *ps)
{
    if (*ps->p == '-')
        ps->p++;
    if (!is_digit(ps))
        return -1;
    if (*ps->p++ != '0')
        while (is_digit(ps))
            ps->p++;
    if (ps->p < ps->end && *ps->p == '.') {
        ps->p++;
        if (!is_digit(ps))
            return -1;
        while (is_digit(ps))
            ps->p++;
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
            ps->p++;
        if (!is_digit(ps))
            return -1;
        while (is_digit(ps))
            ps->p++;
    }
    return 0;
}

enum literal { LIT_NONE = -1, LIT_NULL, LIT_TRUE, LIT_FALSE };

/* null, true or false at ps->p: past it, which one; LIT_NONE if none. */
static enum literal scan_literal(struct parser *ps)
{
    static const char *const words[] = {"null", "true", "false"};
    for (int i = 0; i < 3; i++) {
        size_t wl = strlen(words[i]);
        if ((size_t)(ps->end - ps->p) >= wl && memcmp(ps->p, words[i], wl) == 0) {
            ps->p += wl;
            return (enum literal)i;
        }
    }
    return LIT_NONE;
}

static sj_node *new_node(struct parser *ps, enum sj_kind k)
{
    sj_node *n = arena_alloc(ps->doc, sizeof *n);
    if (n) {
        memset(n, 0, sizeof *n);
        n->kind = k;
    }
    return n;
}

static sj_node *parse_container(struct parser *ps, int is_obj)
{
    if (++ps->depth > ps->max_depth) {
        ps->err = TFTAP_ELIMIT;
        return NULL;
    }
    sj_node *n = new_node(ps, is_obj ? SJ_OBJECT : SJ_ARRAY);
    if (!n)
        return NULL;
    ps->p++;
    sj_node **tail = &n->child;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == (is_obj ? '}' : ']')) {
        ps->p++;
        ps->depth--;
        return n;
    }
    for (;;) {
        const char *key = NULL;
        size_t klen = 0;
        skip_ws(ps);
        if (is_obj) {
            if (ps->p >= ps->end || *ps->p != '"' || parse_string(ps, &key, &klen))
                return NULL;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':')
                return NULL;
            ps->p++;
        }
        sj_node *v = parse_value(ps);
        if (!v)
            return NULL;
        v->key = key;
        v->key_len = klen;
        *tail = v;
        tail = &v->next;
        n->n++;
        skip_ws(ps);
        if (ps->p >= ps->end)
            return NULL;
        if (*ps->p == ',') {
            ps->p++;
            continue;
        }
        if (*ps->p != (is_obj ? '}' : ']'))
            return NULL;
        ps->p++;
        ps->depth--;
        return n;
    }
}

static sj_node *parse_value(struct parser *ps)
{
    skip_ws(ps);
    if (ps->p >= ps->end)
        return NULL;
    char c = *ps->p;
    if (c == '{' || c == '[')
        return parse_container(ps, c == '{');
    if (c == '"') {
        sj_node *n = new_node(ps, SJ_STRING);
        if (!n || parse_string(ps, &n->str, &n->len))
            return NULL;
        return n;
    }
    enum literal lit = scan_literal(ps);
    if (lit != LIT_NONE) {
        sj_node *n = new_node(ps, lit == LIT_NULL ? SJ_NULL : SJ_BOOL);
        if (n)
            n->boolean = lit == LIT_TRUE;
        return n;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        const char *s = ps->p;
        if (scan_number(ps))
            return NULL;
        sj_node *n = new_node(ps, SJ_NUMBER);
        if (!n)
            return NULL;
        size_t len = (size_t)(ps->p - s);
        char *t = arena_alloc(ps->doc, len + 1);
        if (!t)
            return NULL;
        memcpy(t, s, len);
        t[len] = '\0';
        n->str = t;
        n->len = len;
        return n;
    }
    return NULL;
}

int sj_parse(const char *text, size_t len, unsigned max_depth, sj_doc **out)
{
    *out = NULL;
    sj_doc *d = calloc(1, sizeof *d);
    if (!d)
        return TFTAP_ENOMEM;
    struct parser ps = {d, text, text + len, 0, max_depth ? max_depth : 512, 0};
    d->root = parse_value(&ps);
    skip_ws(&ps);
    if (!d->root || ps.p != ps.end) {
        sj_free(d);
        return ps.err ? ps.err : TFTAP_EDECODE;
    }
    *out = d;
    return 0;
}

/* ---- checking without building ---------------------------------------- */

/* Members of the top object whose text is wanted (sj_members). */
struct wanted {
    const char *const *keys;
    size_t n;
    sj_span *spans;
};

/* Does the member name raw[0..n) (as written, escapes and all, checked by
 * scan_string) read key? */
static int key_is(const char *raw, size_t n, int escaped, const char *key)
{
    size_t kl = strlen(key);
    if (!escaped)
        return n == kl && memcmp(raw, key, n) == 0;
    struct parser ps = {NULL, raw, raw + n, 0, 0, 0};
    size_t at = 0;
    while (ps.p < ps.end) {
        char u[4];
        size_t ul = 1;
        if (*ps.p != '\\') {
            u[0] = *ps.p++;
        } else {
            unsigned cp = 0;
            (void)escape(&ps, ps.end, &cp);
            ul = (size_t)(put_utf8(u, cp) - u);
        }
        if (kl - at < ul || memcmp(key + at, u, ul) != 0)
            return 0;
        at += ul;
    }
    return at == kl;
}

static int skip_value(struct parser *ps, const struct wanted *w);

/* An object's members go to w when it is given (the top object). */
static int skip_container(struct parser *ps, int is_obj, const struct wanted *w)
{
    if (++ps->depth > ps->max_depth) {
        ps->err = TFTAP_ELIMIT;
        return -1;
    }
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == (is_obj ? '}' : ']')) {
        ps->p++;
        ps->depth--;
        return 0;
    }
    for (;;) {
        const char *name = NULL, *name_end = NULL;
        int escaped = 0;
        skip_ws(ps);
        if (is_obj) {
            name = ps->p + 1;
            if (ps->p >= ps->end || *ps->p != '"' || scan_string(ps, &name_end, &escaped))
                return -1;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':')
                return -1;
            ps->p++;
            skip_ws(ps);
        }
        const char *value = ps->p;
        if (skip_value(ps, NULL))
            return -1;
        for (size_t i = 0; is_obj && w && i < w->n; i++)
            if (w->spans[i].text == NULL &&
                key_is(name, (size_t)(name_end - name), escaped, w->keys[i]))
                w->spans[i] = (sj_span){value, (size_t)(ps->p - value)};
        skip_ws(ps);
        if (ps->p >= ps->end)
            return -1;
        if (*ps->p == ',') {
            ps->p++;
            continue;
        }
        if (*ps->p != (is_obj ? '}' : ']'))
            return -1;
        ps->p++;
        ps->depth--;
        return 0;
    }
}

/* What parse_value accepts, past it. */
static int skip_value(struct parser *ps, const struct wanted *w)
{
    skip_ws(ps);
    if (ps->p >= ps->end)
        return -1;
    char c = *ps->p;
    if (c == '{' || c == '[')
        return skip_container(ps, c == '{', w);
    if (c == '"') {
        const char *end;
        int escaped;
        return scan_string(ps, &end, &escaped);
    }
    if (scan_literal(ps) != LIT_NONE)
        return 0;
    if (c == '-' || (c >= '0' && c <= '9'))
        return scan_number(ps);
    return -1;
}

int sj_members(const char *text, size_t len, unsigned max_depth, const char *const *keys,
               size_t nkeys, sj_span *spans)
{
    for (size_t i = 0; i < nkeys; i++)
        spans[i] = (sj_span){NULL, 0};
    struct parser ps = {NULL, text, text + len, 0, max_depth ? max_depth : 512, 0};
    const struct wanted w = {keys, nkeys, spans};
    int rc = skip_value(&ps, &w);
    skip_ws(&ps);
    if (rc || ps.p != ps.end) {
        for (size_t i = 0; i < nkeys; i++)
            spans[i] = (sj_span){NULL, 0};
        return ps.err ? ps.err : TFTAP_EDECODE;
    }
    return 0;
}

void sj_free(sj_doc *d)
{
    if (!d)
        return;
    while (d->chunks) {
        struct chunk *n = d->chunks->next;
        free(d->chunks);
        d->chunks = n;
    }
    free(d);
}

sj_node *sj_root(sj_doc *d)
{
    return d ? d->root : NULL;
}

sj_node *sj_get_n(const sj_node *obj, const char *key, size_t key_len)
{
    if (!obj || obj->kind != SJ_OBJECT)
        return NULL;
    for (sj_node *c = obj->child; c; c = c->next)
        if (c->key_len == key_len && memcmp(c->key, key, key_len) == 0)
            return c;
    return NULL;
}

sj_node *sj_get(const sj_node *obj, const char *key)
{
    return sj_get_n(obj, key, strlen(key));
}

sj_node *sj_at(const sj_node *arr, size_t i)
{
    if (!arr || arr->kind != SJ_ARRAY)
        return NULL;
    sj_node *c = arr->child;
    while (c && i--)
        c = c->next;
    return c;
}

void sj_write(const sj_node *n, tftap_buf *out)
{
    switch (n->kind) {
    case SJ_NULL:
        tftap_buf_puts(out, "null");
        break;
    case SJ_BOOL:
        tftap_buf_puts(out, n->boolean ? "true" : "false");
        break;
    case SJ_NUMBER:
        tftap_buf_append(out, n->str, n->len);
        break;
    case SJ_STRING:
        tftap_buf_json_string(out, n->str, n->len);
        break;
    case SJ_ARRAY:
    case SJ_OBJECT:
        tftap_buf_putc(out, n->kind == SJ_ARRAY ? '[' : '{');
        for (const sj_node *c = n->child; c; c = c->next) {
            if (c != n->child)
                tftap_buf_putc(out, ',');
            if (n->kind == SJ_OBJECT) {
                tftap_buf_json_string(out, c->key, c->key_len);
                tftap_buf_putc(out, ':');
            }
            sj_write(c, out);
        }
        tftap_buf_putc(out, n->kind == SJ_ARRAY ? ']' : '}');
        break;
    }
}

/* Members in key order; members of one key (a duplicate) stay in document
 * order, so the sorted text is one text however often it is written. */
struct member {
    const sj_node *node;
    size_t index;
};

static int member_cmp(const void *x, const void *y)
{
    const struct member *a = x, *b = y;
    int c = tftap_bytes_cmp(a->node->key, a->node->key_len, b->node->key, b->node->key_len);
    if (c)
        return c;
    return a->index < b->index ? -1 : a->index > b->index;
}

int sj_write_sorted(const sj_node *n, tftap_buf *out)
{
    if (n->kind != SJ_ARRAY && n->kind != SJ_OBJECT) {
        sj_write(n, out);
        return 0;
    }
    struct member *kids = malloc((n->n ? n->n : 1) * sizeof *kids);
    if (!kids)
        return TFTAP_ENOMEM;
    size_t k = 0;
    for (const sj_node *c = n->child; c && k < n->n; c = c->next, k++)
        kids[k] = (struct member){c, k};
    if (n->kind == SJ_OBJECT)
        qsort(kids, k, sizeof *kids, member_cmp);
    int err = 0;
    tftap_buf_putc(out, n->kind == SJ_ARRAY ? '[' : '{');
    for (size_t i = 0; i < k && !err; i++) {
        if (i)
            tftap_buf_putc(out, ',');
        if (n->kind == SJ_OBJECT) {
            tftap_buf_json_string(out, kids[i].node->key, kids[i].node->key_len);
            tftap_buf_putc(out, ':');
        }
        err = sj_write_sorted(kids[i].node, out);
    }
    tftap_buf_putc(out, n->kind == SJ_ARRAY ? ']' : '}');
    free(kids);
    return err;
}

/* An integer's digits without sign and leading zeros ("" for zero), when
 * text is a plain integer (no fraction, no exponent). */
static int integer_digits(const sj_node *n, int *negative, const char **digits, size_t *len)
{
    const char *p = n->str, *end = n->str + n->len;
    *negative = p < end && *p == '-';
    p += *negative;
    for (const char *q = p; q < end; q++)
        if (*q < '0' || *q > '9')
            return 0;
    while (p < end && *p == '0')
        p++;
    *digits = p;
    *len = (size_t)(end - p);
    return 1;
}

/* Integers compare digit for digit: a double holds 2^53 + 1 as 2^53, and
 * decoded values carry 64-bit ids and arbitrary-precision numbers. Others
 * (a fraction or an exponent on either side) compare as doubles. */
static int numbers_equal(const sj_node *a, const sj_node *b)
{
    int na, nb;
    const char *da, *db;
    size_t la, lb;
    if (integer_digits(a, &na, &da, &la) && integer_digits(b, &nb, &db, &lb))
        return la == lb && (la == 0 || na == nb) && memcmp(da, db, la) == 0;
    return strtod(a->str, NULL) == strtod(b->str, NULL);
}

static int same_key(const sj_node *a, const sj_node *b)
{
    return a->key_len == b->key_len && memcmp(a->key, b->key, a->key_len) == 0;
}

/* Two objects of n members each, compared in key order (n log n where the
 * member-by-member search is quadratic). -1 when out of memory. */
static int objects_equal_sorted(const sj_node *a, const sj_node *b)
{
    size_t n = a->n;
    struct member *ma = malloc(2 * n * sizeof *ma), *mb = ma ? ma + n : NULL;
    if (!ma)
        return -1;
    size_t i = 0;
    for (const sj_node *x = a->child, *y = b->child; x && y && i < n; x = x->next, y = y->next) {
        ma[i] = (struct member){x, i};
        mb[i] = (struct member){y, i};
        i++;
    }
    qsort(ma, n, sizeof *ma, member_cmp);
    qsort(mb, n, sizeof *mb, member_cmp);
    int eq = 1;
    for (i = 0; i < n && eq; i++)
        eq = same_key(ma[i].node, mb[i].node) && sj_equal(ma[i].node, mb[i].node);
    free(ma);
    return eq;
}

int sj_equal(const sj_node *a, const sj_node *b)
{
    if (!a || !b)
        return a == b;
    if (a->kind != b->kind)
        return 0;
    switch (a->kind) {
    case SJ_NULL:
        return 1;
    case SJ_BOOL:
        return a->boolean == b->boolean;
    case SJ_NUMBER:
        if (a->len == b->len && memcmp(a->str, b->str, a->len) == 0)
            return 1;
        return numbers_equal(a, b);
    case SJ_STRING:
        return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
    case SJ_ARRAY: {
        if (a->n != b->n)
            return 0;
        for (const sj_node *x = a->child, *y = b->child; x; x = x->next, y = y->next)
            if (!sj_equal(x, y))
                return 0;
        return 1;
    }
    case SJ_OBJECT:
        if (a->n != b->n)
            return 0;
        if (a->n > 16) {
            int eq = objects_equal_sorted(a, b);
            if (eq >= 0)
                return eq;
        }
        /* Members by key in any order; the k-th member of a key that
         * appears more than once is held against the other's k-th. */
        for (const sj_node *x = a->child; x; x = x->next) {
            size_t before = 0;
            for (const sj_node *c = a->child; c != x; c = c->next)
                before += same_key(c, x);
            const sj_node *y = b->child;
            for (; y; y = y->next)
                if (same_key(y, x) && before-- == 0)
                    break;
            if (!sj_equal(x, y))
                return 0;
        }
        return 1;
    }
    return 0;
}

static int single_key(const sj_node *n, const char *key)
{
    return n && n->kind == SJ_OBJECT && n->n == 1 && n->child->key_len == strlen(key) &&
           memcmp(n->child->key, key, n->child->key_len) == 0;
}

int sj_is_unknown(const sj_node *n)
{
    return single_key(n, "$unknown");
}

int sj_is_sensitive(const sj_node *n)
{
    return single_key(n, "$sensitive");
}
