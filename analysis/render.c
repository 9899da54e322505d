/* analysis: one recorded resource change rendered the way a plan reads. */
#include "analysis/analysis.h"
#include "analysis/analysis_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct rctx {
    tftap_buf *out;
    int color;
    const sj_node *rr; /* requires_replace: array of {"path": ".a[0]"} or strings */
};

static const char *color_of(char mark)
{
    switch (mark) {
    case '+':
        return "\033[32m";
    case '-':
        return "\033[31m";
    case '~':
        return "\033[33m";
    case 'r':
        return "\033[35m";
    case '<':
        return "\033[36m";
    default:
        return "";
    }
}

static void put_mark(struct rctx *x, char mark)
{
    const char *text = mark == 'r'   ? "-/+"
                       : mark == '<' ? "<="
                       : mark == '+' ? "+"
                       : mark == '-' ? "-"
                       : mark == '~' ? "~"
                                     : " ";
    if (x->color && mark != ' ')
        tftap_buf_printf(x->out, "%s%s\033[0m", color_of(mark), text);
    else
        tftap_buf_puts(x->out, text);
}

static void indent(struct rctx *x, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        tftap_buf_putc(x->out, ' ');
}

static const char *hint_kind(const struct analysis_hint *h)
{
    if (h->attrs) {
        if (h->nesting && strcmp(h->nesting, "LIST") == 0)
            return "list";
        if (h->nesting && strcmp(h->nesting, "SET") == 0)
            return "set";
        if (h->nesting && strcmp(h->nesting, "MAP") == 0)
            return "map";
        return "object";
    }
    const sj_node *t = h->ty;
    if (t && t->kind == SJ_ARRAY && t->child && t->child->kind == SJ_STRING)
        t = t->child;
    return t && t->kind == SJ_STRING ? t->str : NULL;
}

static int hint_is(const struct analysis_hint *h, const char *kind)
{
    const char *k = hint_kind(h);
    return k && strcmp(k, kind) == 0;
}

/* A nested block type of a block schema by name, or NULL. */
static const sj_node *block_type(const sj_node *schema, const char *key, size_t klen)
{
    const sj_node *bts = sj_get(schema, "block_types");
    if (!bts || bts->kind != SJ_ARRAY)
        return NULL;
    for (const sj_node *b = bts->child; b; b = b->next) {
        const sj_node *n = sj_get(b, "type_name");
        if (n && n->kind == SJ_STRING && n->len == klen && memcmp(n->str, key, klen) == 0)
            return b;
    }
    return NULL;
}

/* The displayed length of a key: map keys are quoted. */
static size_t key_len(const sj_node *key_of, int quote)
{
    return key_of->key_len + (quote ? 2 : 0);
}

/* The start of an attribute line at depth d: marker and padded key. */
static void line_start(struct rctx *x, unsigned d, char mark, const sj_node *key_of, size_t width,
                       int quote)
{
    indent(x, 2 + 4 * d);
    put_mark(x, mark);
    tftap_buf_putc(x->out, ' ');
    if (key_of && key_of->key) {
        if (quote)
            tftap_buf_json_string(x->out, key_of->key, key_of->key_len);
        else
            tftap_buf_append(x->out, key_of->key, key_of->key_len);
        size_t kl = key_len(key_of, quote);
        indent(x, width > kl ? (unsigned)(width - kl) : 0);
        tftap_buf_puts(x->out, " = ");
    }
}

static int is_plain(const sj_node *n, enum sj_kind k)
{
    return n && n->kind == k &&
           !(k == SJ_OBJECT && n->n == 1 && n->child->key_len > 0 && n->child->key[0] == '$');
}

static int is_null(const sj_node *n)
{
    return !n || n->kind == SJ_NULL;
}

static void put_unknown(struct rctx *x, const sj_node *u)
{
    tftap_buf *o = x->out;
    const sj_node *r = sj_get(u, "$unknown");
    tftap_buf_puts(o, "(known after apply");
    if (r && r->kind == SJ_OBJECT && r->n) {
        const char *sep = "; ";
        const sj_node *v;
        if ((v = sj_get(r, "null")) && v->kind == SJ_BOOL && !v->boolean) {
            tftap_buf_printf(o, "%snot null", sep);
            sep = ", ";
        }
        if ((v = sj_get(r, "prefix")) && v->kind == SJ_STRING) {
            tftap_buf_printf(o, "%sprefix ", sep);
            tftap_buf_json_string(o, v->str, v->len);
            sep = ", ";
        }
        static const char *const bounds[2][2] = {{"lower", ">"}, {"upper", "<"}};
        for (int i = 0; i < 2; i++) {
            v = sj_get(r, bounds[i][0]);
            if (v && v->kind == SJ_ARRAY && v->n == 2 && v->child->kind == SJ_NUMBER) {
                int incl = v->child->next->kind == SJ_BOOL && v->child->next->boolean;
                tftap_buf_printf(o, "%s%s%s %.*s", sep, bounds[i][1], incl ? "=" : "",
                                 (int)v->child->len, v->child->str);
                sep = ", ";
            }
        }
        const sj_node *mn = sj_get(r, "min_len"), *mx = sj_get(r, "max_len");
        if ((mn && mn->kind == SJ_NUMBER) || (mx && mx->kind == SJ_NUMBER)) {
            tftap_buf_printf(o, "%slength %.*s..%.*s", sep, mn ? (int)mn->len : 0,
                             mn ? mn->str : "", mx ? (int)mx->len : 0, mx ? mx->str : "");
        }
    }
    tftap_buf_putc(o, ')');
}

/* A dynamic value ({"type": T, "value": V}) reads as its value, as in a plan. */
static const sj_node *undyn(const sj_node *n)
{
    if (n && n->kind == SJ_OBJECT && n->n == 2) {
        const sj_node *t = sj_get(n, "type"), *v = sj_get(n, "value");
        if (t && v && (t->kind == SJ_STRING || t->kind == SJ_ARRAY))
            return v;
    }
    return n;
}

/* A scalar or marker value on one line. */
static void put_scalar(struct rctx *x, const sj_node *n)
{
    if (!n || n->kind == SJ_NULL) {
        tftap_buf_puts(x->out, "null");
    } else if (sj_is_unknown(n)) {
        put_unknown(x, n);
    } else if (sj_is_sensitive(n)) {
        tftap_buf_puts(x->out, "(sensitive value)");
    } else if (sj_get(n, "$undecoded")) {
        tftap_buf_puts(x->out, "(value not decoded: no schema)");
    } else if (sj_get(n, "$error")) {
        tftap_buf_puts(x->out, "(value could not be decoded)");
    } else if (n->kind == SJ_OBJECT && sj_get(n, "type") && sj_get(n, "value") && n->n == 2) {
        /* A dynamic value: show the value. */
        put_scalar(x, sj_get(n, "value"));
    } else {
        sj_write(n, x->out);
    }
}

/* Whether a value is in the CLI's "(sensitive value)" form. */
static int is_sensitive(const sj_node *n)
{
    return n && sj_is_sensitive(n);
}

/* Paths as the decoder writes attribute paths: `.name`, `["key"]`, `[3]`. */
static void path_push_key(tftap_buf *p, const char *k, size_t n, int attr)
{
    int ident = attr && n > 0 && !(k[0] >= '0' && k[0] <= '9');
    for (size_t i = 0; i < n && ident; i++)
        ident = (k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') ||
                (k[i] >= '0' && k[i] <= '9') || k[i] == '_' || k[i] == '-';
    if (ident) {
        tftap_buf_putc(p, '.');
        tftap_buf_append(p, k, n);
    } else {
        tftap_buf_putc(p, '[');
        tftap_buf_json_string(p, k, n);
        tftap_buf_putc(p, ']');
    }
}

static int forces_replace(struct rctx *x, const tftap_buf *path)
{
    if (!x->rr || x->rr->kind != SJ_ARRAY)
        return 0;
    for (const sj_node *e = x->rr->child; e; e = e->next) {
        const sj_node *p = e->kind == SJ_STRING ? e : sj_get(e, "path");
        if (p && p->kind == SJ_STRING && p->len == path->len &&
            memcmp(p->str, path->data ? path->data : "", p->len) == 0)
            return 1;
    }
    return 0;
}

static void end_line(struct rctx *x, const tftap_buf *path)
{
    if (path && forces_replace(x, path)) {
        if (x->color)
            tftap_buf_puts(x->out, " \033[31m# forces replacement\033[0m");
        else
            tftap_buf_puts(x->out, " # forces replacement");
    }
    tftap_buf_putc(x->out, '\n');
}

static const sj_node **members_of(const sj_node *a, const sj_node *b, int map, size_t *n);
static void put_whole(struct rctx *x, unsigned d, char mark, const sj_node *key_of,
                      const sj_node *n, size_t width, int in_array, const struct analysis_hint *h);

/* The width "=" is aligned to: every attribute with a value on either side
 * (blocks apart), as the CLI does. */
static size_t members_width(const sj_node *a, const sj_node *b, const sj_node *schema, int quote)
{
    size_t w = 0;
    for (int i = 0; i < 2; i++) {
        const sj_node *o = i ? a : b;
        if (!is_plain(o, SJ_OBJECT))
            continue;
        for (const sj_node *c = o->child; c; c = c->next) {
            if (schema && block_type(schema, c->key, c->key_len))
                continue;
            const sj_node *other = is_plain(i ? b : a, SJ_OBJECT) ? i ? b : a : NULL;
            const sj_node *oc = NULL;
            for (const sj_node *m = other ? other->child : NULL; m; m = m->next)
                if (m->key_len == c->key_len && memcmp(m->key, c->key, c->key_len) == 0)
                    oc = m;
            if (is_null(c) && is_null(oc))
                continue;
            if (key_len(c, quote) > w)
                w = key_len(c, quote);
        }
    }
    return w;
}

static void put_blocks(struct rctx *x, unsigned d, const sj_node *schema, const sj_node *a,
                       const sj_node *b, tftap_buf *path, int has_attrs);

/* A whole object's members (blocks after attributes, as the CLI writes). */
static void whole_members(struct rctx *x, unsigned d, char mark, const sj_node *n,
                          const struct analysis_hint *h, const sj_node *schema)
{
    int quote = hint_is(h, "map");
    size_t w = members_width(mark == '-' ? n : NULL, mark == '-' ? NULL : n, schema, quote);
    int has_attrs = 0;
    for (const sj_node *c = n->child; c; c = c->next) {
        if (c->kind == SJ_NULL || (schema && block_type(schema, c->key, c->key_len)))
            continue;
        struct analysis_hint mh = analysis_hint_member(h, c->key, c->key_len);
        put_whole(x, d, mark, c, c, w, 0, &mh);
        has_attrs = 1;
    }
    if (schema) {
        tftap_buf path = TFTAP_BUF_INIT;
        put_blocks(x, d, schema, mark == '-' ? n : NULL, mark == '-' ? NULL : n, &path, has_attrs);
        tftap_buf_done(&path);
    }
}

/* A whole value added or removed: every line carries the same marker. */
static void put_whole(struct rctx *x, unsigned d, char mark, const sj_node *key_of,
                      const sj_node *n, size_t width, int in_array, const struct analysis_hint *h)
{
    n = undyn(n);
    line_start(x, d, mark, key_of, width, key_of && in_array == 2);
    if (is_sensitive(n)) {
        tftap_buf_puts(x->out, "(sensitive value)");
        if (mark == '-' && !in_array)
            tftap_buf_puts(x->out, " -> null");
    } else if (is_plain(n, SJ_OBJECT) || is_plain(n, SJ_ARRAY)) {
        int obj = n->kind == SJ_OBJECT;
        if (n->n == 0) {
            tftap_buf_puts(x->out, obj ? "{}" : "[]");
        } else {
            tftap_buf_puts(x->out, obj ? "{\n" : "[\n");
            if (obj) {
                /* Map keys are quoted; the line_start above knows by in_array == 2. */
                int quote = hint_is(h, "map");
                size_t w = members_width(NULL, n, NULL, quote), nk = 0;
                const sj_node **keys = members_of(NULL, n, quote, &nk);
                for (size_t i = 0; i < nk; i++) {
                    const sj_node *c = keys[i];
                    if (c->kind == SJ_NULL && !quote)
                        continue; /* the CLI leaves null attributes out */
                    struct analysis_hint mh = analysis_hint_member(h, c->key, c->key_len);
                    put_whole(x, d + 1, mark, c, c, w, quote ? 2 : 0, &mh);
                }
                free(keys);
            } else {
                size_t i = 0;
                for (const sj_node *c = n->child; c; c = c->next, i++) {
                    struct analysis_hint eh = analysis_hint_elem(h, i);
                    put_whole(x, d + 1, mark, NULL, c, 0, 1, &eh);
                }
            }
            indent(x, 4 + 4 * d);
            tftap_buf_puts(x->out, obj ? "}" : "]");
        }
        if (mark == '-' && in_array != 1)
            tftap_buf_puts(x->out, " -> null");
    } else {
        put_scalar(x, n);
        if (mark == '-' && in_array != 1)
            tftap_buf_puts(x->out, " -> null");
    }
    if (in_array == 1)
        tftap_buf_putc(x->out, ',');
    tftap_buf_putc(x->out, '\n');
}

static void put_hidden(struct rctx *x, unsigned d, size_t n, const char *what)
{
    if (!n)
        return;
    indent(x, 4 + 4 * d);
    tftap_buf_printf(x->out, "# (%zu unchanged %s%s hidden)\n", n, what, n == 1 ? "" : "s");
}

static void put_diff(struct rctx *x, unsigned d, const sj_node *key_of, const sj_node *a,
                     const sj_node *b, size_t width, tftap_buf *path, int in_array,
                     const struct analysis_hint *h);

/* Attributes a plan always shows: they say which object it is. */
static int important(const sj_node *m)
{
    return m->key && ((m->key_len == 2 && memcmp(m->key, "id", 2) == 0) ||
                      (m->key_len == 4 && memcmp(m->key, "name", 4) == 0) ||
                      (m->key_len == 4 && memcmp(m->key, "tags", 4) == 0));
}

static const sj_node *member(const sj_node *o, const char *key, size_t klen)
{
    if (!is_plain(o, SJ_OBJECT))
        return NULL;
    for (const sj_node *m = o->child; m; m = m->next)
        if (m->key_len == klen && memcmp(m->key, key, klen) == 0)
            return m;
    return NULL;
}

static int cmp_member_key(const void *x, const void *y)
{
    const sj_node *a = *(const sj_node *const *)x, *b = *(const sj_node *const *)y;
    return tftap_bytes_cmp(a->key, a->key_len, b->key, b->key_len);
}

/* The members of two objects, each name once: after's members in order,
 * then those only before had; a map's sorted by key, as the CLI prints a
 * map whatever order the provider sent. A heap array (*n entries), or NULL
 * when out of memory or there are none. */
static const sj_node **members_of(const sj_node *a, const sj_node *b, int map, size_t *n)
{
    size_t cap = (is_plain(a, SJ_OBJECT) ? a->n : 0) + (is_plain(b, SJ_OBJECT) ? b->n : 0);
    *n = 0;
    const sj_node **v = cap ? malloc(cap * sizeof *v) : NULL;
    if (!v)
        return NULL;
    for (int pass = 0; pass < 2; pass++) {
        const sj_node *from = pass == 0 ? b : a;
        if (!is_plain(from, SJ_OBJECT))
            continue;
        for (const sj_node *c = from->child; c; c = c->next)
            if (pass == 0 || !member(b, c->key, c->key_len))
                v[(*n)++] = c;
    }
    if (map)
        qsort(v, *n, sizeof *v, cmp_member_key);
    return v;
}

/* Members of two objects (see members_of); then, with a block schema, its
 * nested blocks. */
static void diff_members(struct rctx *x, unsigned d, const sj_node *a, const sj_node *b,
                         tftap_buf *path, const struct analysis_hint *h, const sj_node *schema)
{
    int map = hint_is(h, "map");
    size_t w = members_width(a, b, schema, map), hidden = 0, n = 0;
    int has_attrs = 0;
    const sj_node **keys = members_of(a, b, map, &n);
    for (size_t i = 0; i < n; i++) {
        const sj_node *c = keys[i];
        if (schema && block_type(schema, c->key, c->key_len))
            continue;
        const sj_node *before = member(a, c->key, c->key_len);
        const sj_node *after = member(b, c->key, c->key_len);
        if (is_null(before) && is_null(after))
            continue;
        has_attrs = 1;
        struct analysis_hint mh = analysis_hint_member(h, c->key, c->key_len);
        if (sj_equal(before, after)) {
            if (!map && important(c)) {
                put_whole(x, d, ' ', c, c, w, 0, &mh);
            } else {
                hidden++;
            }
            continue;
        }
        size_t mark = path->len;
        path_push_key(path, c->key, c->key_len, !map);
        put_diff(x, d, c, before, after, w, path, map ? 2 : 0, &mh);
        path->len = mark;
        if (path->data)
            path->data[mark] = '\0';
    }
    free(keys);
    put_hidden(x, d, hidden, map ? "element" : "attribute");
    if (schema)
        put_blocks(x, d, schema, a, b, path, has_attrs);
}

/* One nested block: "+ name {", "~ name {", "- name {", or unchanged. */
static void put_block(struct rctx *x, unsigned d, const sj_node *bt, const sj_node *label,
                      const sj_node *a, const sj_node *b, tftap_buf *path, int *first,
                      int has_attrs, size_t *unchanged)
{
    const sj_node *name = sj_get(bt, "type_name"), *sub = sj_get(bt, "block");
    if (is_null(a) && is_null(b))
        return;
    if (is_sensitive(a) || is_sensitive(b))
        return; /* the CLI says nothing of sensitive blocks */
    if (sj_equal(a, b)) {
        (*unchanged)++;
        return;
    }
    char mark = is_null(a) ? '+' : is_null(b) ? '-' : '~';
    if (*first && has_attrs)
        tftap_buf_putc(x->out, '\n');
    *first = 0;
    indent(x, 2 + 4 * d);
    put_mark(x, mark);
    tftap_buf_putc(x->out, ' ');
    tftap_buf_append(x->out, name->str, name->len);
    if (label) {
        tftap_buf_putc(x->out, ' ');
        tftap_buf_json_string(x->out, label->key, label->key_len);
    }
    tftap_buf_puts(x->out, " {");
    end_line(x, path);
    struct analysis_hint bh = {NULL, sj_get(sub, "attributes"), NULL};
    if (bh.attrs && bh.attrs->kind != SJ_ARRAY)
        bh.attrs = NULL;
    if (mark == '~')
        diff_members(x, d + 1, a, b, path, &bh, sub);
    else if (is_plain(mark == '+' ? b : a, SJ_OBJECT))
        whole_members(x, d + 1, mark, mark == '+' ? b : a, &bh, sub);
    indent(x, 4 + 4 * d);
    tftap_buf_puts(x->out, "}\n");
}

/* The nested blocks of a block, by type name, after its attributes. */
static void put_blocks(struct rctx *x, unsigned d, const sj_node *schema, const sj_node *a,
                       const sj_node *b, tftap_buf *path, int has_attrs)
{
    const sj_node *bts = sj_get(schema, "block_types");
    size_t unchanged = 0;
    if (!bts || bts->kind != SJ_ARRAY)
        return;
    for (const sj_node *bt = bts->child; bt; bt = bt->next) {
        const sj_node *name = sj_get(bt, "type_name"), *nest = sj_get(bt, "nesting");
        if (!name || name->kind != SJ_STRING)
            continue;
        const sj_node *va = member(a, name->str, name->len), *vb = member(b, name->str, name->len);
        const char *mode = nest && nest->kind == SJ_STRING ? nest->str : "SINGLE";
        int first = 1;
        size_t mark = path->len;
        path_push_key(path, name->str, name->len, 1);
        if (strcmp(mode, "LIST") == 0 || strcmp(mode, "SET") == 0) {
            int set = strcmp(mode, "SET") == 0;
            const sj_node *ea = is_plain(va, SJ_ARRAY) ? va->child : NULL;
            const sj_node *eb = is_plain(vb, SJ_ARRAY) ? vb->child : NULL;
            if (set) {
                /* Elements equal on both sides are unchanged; the others go
                 * and come. */
                for (const sj_node *e = ea; e; e = e->next) {
                    int kept = 0;
                    for (const sj_node *f = eb; f && !kept; f = f->next)
                        kept = sj_equal(e, f);
                    put_block(x, d, bt, NULL, e, kept ? e : NULL, path, &first, has_attrs,
                              &unchanged);
                }
                for (const sj_node *f = eb; f; f = f->next) {
                    int kept = 0;
                    for (const sj_node *e = ea; e && !kept; e = e->next)
                        kept = sj_equal(e, f);
                    if (!kept)
                        put_block(x, d, bt, NULL, NULL, f, path, &first, has_attrs, &unchanged);
                }
            } else {
                for (size_t i = 0; ea || eb; i++) {
                    size_t m2 = path->len;
                    tftap_buf_printf(path, "[%zu]", i);
                    put_block(x, d, bt, NULL, ea, eb, path, &first, has_attrs, &unchanged);
                    path->len = m2;
                    if (path->data)
                        path->data[m2] = '\0';
                    ea = ea ? ea->next : NULL;
                    eb = eb ? eb->next : NULL;
                }
            }
        } else if (strcmp(mode, "MAP") == 0) {
            for (int pass = 0; pass < 2; pass++) {
                const sj_node *from = pass == 0 ? vb : va, *other = pass == 0 ? va : vb;
                if (!is_plain(from, SJ_OBJECT))
                    continue;
                for (const sj_node *c = from->child; c; c = c->next) {
                    const sj_node *o = member(other, c->key, c->key_len);
                    if (pass == 1 && o)
                        continue;
                    put_block(x, d, bt, c, pass == 0 ? o : c, pass == 0 ? c : NULL, path, &first,
                              has_attrs, &unchanged);
                }
            }
        } else {
            put_block(x, d, bt, NULL, va, vb, path, &first, has_attrs, &unchanged);
        }
        path->len = mark;
        if (path->data)
            path->data[mark] = '\0';
    }
    if (unchanged) {
        tftap_buf_putc(x->out, '\n');
        put_hidden(x, d, unchanged, "block");
    }
}

/* Elements of two sequences lined up as the CLI does: the longest common
 * subsequence of equal elements stays; before it, an unequal object meets
 * the next unequal object as an update, other elements go, then come. */
struct pairing {
    const sj_node **a, **b; /* elements */
    size_t na, nb;
    size_t (*lcs)[2]; /* index pairs of the common subsequence */
    size_t nl;
};

#define LCS_MAX_CELLS ((size_t)1 << 22)

static int pairing_init(struct pairing *p, const sj_node *a, const sj_node *b)
{
    memset(p, 0, sizeof *p);
    p->na = a->n;
    p->nb = b->n;
    p->a = calloc(p->na + 1, sizeof *p->a);
    p->b = calloc(p->nb + 1, sizeof *p->b);
    p->lcs = calloc((p->na < p->nb ? p->na : p->nb) + 1, sizeof *p->lcs);
    if (!p->a || !p->b || !p->lcs)
        return TFTAP_ENOMEM;
    size_t i = 0;
    for (const sj_node *e = a->child; e; e = e->next)
        p->a[i++] = e;
    i = 0;
    for (const sj_node *e = b->child; e; e = e->next)
        p->b[i++] = e;
    if ((p->na + 1) * (p->nb + 1) > LCS_MAX_CELLS) {
        /* Too long to compare all with all: equal elements at equal places. */
        for (i = 0; i < p->na && i < p->nb; i++)
            if (sj_equal(p->a[i], p->b[i])) {
                p->lcs[p->nl][0] = p->lcs[p->nl][1] = i;
                p->nl++;
            }
        return 0;
    }
    uint32_t *t = calloc((p->na + 1) * (p->nb + 1), sizeof *t);
    if (!t)
        return TFTAP_ENOMEM;
#define T(i, j) t[(i) * (p->nb + 1) + (j)]
    for (size_t ia = p->na; ia-- > 0;)
        for (size_t ib = p->nb; ib-- > 0;)
            T(ia, ib) = sj_equal(p->a[ia], p->b[ib])
                            ? T(ia + 1, ib + 1) + 1
                            : (T(ia + 1, ib) > T(ia, ib + 1) ? T(ia + 1, ib) : T(ia, ib + 1));
    for (size_t ia = 0, ib = 0; ia < p->na && ib < p->nb;) {
        if (sj_equal(p->a[ia], p->b[ib])) {
            p->lcs[p->nl][0] = ia++;
            p->lcs[p->nl][1] = ib++;
            p->nl++;
        } else if (T(ia + 1, ib) >= T(ia, ib + 1)) {
            ia++;
        } else {
            ib++;
        }
    }
#undef T
    free(t);
    return 0;
}

static void pairing_done(struct pairing *p)
{
    free(p->a);
    free(p->b);
    free(p->lcs);
}

struct elem_ctx {
    struct rctx *x;
    unsigned d;
    tftap_buf *path;
    const struct analysis_hint *eh;
    int context; /* a list of primitives: show unchanged neighbours */
    size_t run, hidden;
    const sj_node *last;
    int render_next;
};

static void put_diff(struct rctx *x, unsigned d, const sj_node *key_of, const sj_node *a,
                     const sj_node *b, size_t width, tftap_buf *path, int in_array,
                     const struct analysis_hint *h);

static void one_element(struct elem_ctx *c, const sj_node *ea, const sj_node *eb, size_t index)
{
    int noop = ea && eb && sj_equal(ea, eb);
    if (noop && !c->render_next) {
        c->run++;
        c->last = ea;
        return;
    }
    c->render_next = 0;
    if (c->context) {
        if (c->run > 1)
            put_hidden(c->x, c->d + 1, c->run - 1, "element");
        if (c->run > 0)
            put_whole(c->x, c->d + 1, ' ', NULL, c->last, 0, 1, c->eh);
        c->run = 0;
        c->render_next = !noop;
    }
    if (noop) {
        put_whole(c->x, c->d + 1, ' ', NULL, ea, 0, 1, c->eh);
        return;
    }
    size_t mark = c->path->len;
    tftap_buf_printf(c->path, "[%zu]", index);
    put_diff(c->x, c->d + 1, NULL, ea, eb, 0, c->path, 1, c->eh);
    c->path->len = mark;
    if (c->path->data)
        c->path->data[mark] = '\0';
}

static void diff_elements(struct rctx *x, unsigned d, const sj_node *a, const sj_node *b,
                          tftap_buf *path, const struct analysis_hint *h)
{
    struct analysis_hint eh = analysis_hint_elem(h, 0);
    const char *ek = hint_kind(&eh);
    struct elem_ctx c = {x, d, path, &eh, 0, 0, 0, NULL, 0};
    c.context = hint_is(h, "list") && ek &&
                (strcmp(ek, "string") == 0 || strcmp(ek, "number") == 0 || strcmp(ek, "bool") == 0);
    struct pairing p;
    if (pairing_init(&p, a, b) == 0) {
        size_t ia = 0, ib = 0, k = 0;
        while (ia < p.na || ib < p.nb || k < p.nl) {
            while (ia < p.na && (k >= p.nl || ia != p.lcs[k][0])) {
                if (is_plain(p.a[ia], SJ_OBJECT) && ib < p.nb && is_plain(p.b[ib], SJ_OBJECT) &&
                    (k >= p.nl || ib != p.lcs[k][1])) {
                    one_element(&c, p.a[ia], p.b[ib], ib);
                    ia++;
                    ib++;
                    continue;
                }
                one_element(&c, p.a[ia], NULL, ia);
                ia++;
            }
            while (ib < p.nb && (k >= p.nl || ib != p.lcs[k][1])) {
                one_element(&c, NULL, p.b[ib], ib);
                ib++;
            }
            if (k < p.nl) {
                one_element(&c, p.a[ia], p.b[ib], ib);
                ia++;
                ib++;
                k++;
            }
        }
    }
    pairing_done(&p);
    put_hidden(x, d + 1, c.run, "element");
}

static void put_diff(struct rctx *x, unsigned d, const sj_node *key_of, const sj_node *a,
                     const sj_node *b, size_t width, tftap_buf *path, int in_array,
                     const struct analysis_hint *h)
{
    int quote = in_array == 2; /* a map's key */
    a = undyn(a);
    b = undyn(b);
    if (is_null(a) && !is_null(b)) {
        put_whole(x, d, '+', key_of, b, width, in_array, h);
        return;
    }
    if (!is_null(a) && is_null(b)) {
        put_whole(x, d, '-', key_of, a, width, in_array, h);
        return;
    }
    if (is_sensitive(a) || is_sensitive(b)) {
        /* The CLI shows neither side of a sensitive change. */
        line_start(x, d, '~', key_of, width, quote);
        tftap_buf_puts(x->out, "(sensitive value)");
        end_line(x, path);
        return;
    }
    if (is_plain(a, SJ_OBJECT) && is_plain(b, SJ_OBJECT)) {
        line_start(x, d, '~', key_of, width, quote);
        tftap_buf_puts(x->out, "{");
        end_line(x, path);
        diff_members(x, d + 1, a, b, path, h, NULL);
        indent(x, 4 + 4 * d);
        tftap_buf_puts(x->out, in_array == 1 ? "},\n" : "}\n");
        return;
    }
    if (is_plain(a, SJ_ARRAY) && is_plain(b, SJ_ARRAY)) {
        line_start(x, d, '~', key_of, width, quote);
        tftap_buf_puts(x->out, "[");
        end_line(x, path);
        diff_elements(x, d, a, b, path, h);
        indent(x, 4 + 4 * d);
        tftap_buf_puts(x->out, in_array == 1 ? "],\n" : "]\n");
        return;
    }
    /* Scalars, markers, or a change of shape. */
    if (in_array == 1) {
        put_whole(x, d, '-', NULL, a, 0, 1, h);
        put_whole(x, d, '+', NULL, b, 0, 1, h);
        return;
    }
    line_start(x, d, '~', key_of, width, quote);
    put_scalar(x, a);
    tftap_buf_puts(x->out, " -> ");
    put_scalar(x, b);
    end_line(x, path);
}

/* "module.m.aws_instance.web[0]" -> "web"; NULL address -> "?". */
static void resource_name(const char *address, const char *type, tftap_buf *out)
{
    if (!address) {
        tftap_buf_putc(out, '?');
        return;
    }
    const char *p = address;
    if (type) {
        size_t tl = strlen(type);
        const char *hit = NULL;
        for (const char *q = strstr(p, type); q; q = strstr(q + 1, type))
            if ((q == p || q[-1] == '.') && q[tl] == '.')
                hit = q;
        if (hit)
            p = hit + tl + 1;
    }
    size_t n = strcspn(p, "[");
    tftap_buf_append(out, p, n);
}

static int parse_opt(const char *text, sj_doc **doc, const sj_node **node)
{
    *doc = NULL;
    *node = NULL;
    if (!text)
        return 0;
    int rc = sj_parse(text, strlen(text), TFTAP_JSON_MAX_DEPTH, doc);
    if (rc)
        return rc;
    *node = sj_root(*doc);
    return 0;
}

/* The state after the change. A failed call's is the one it attempted: an
 * apply's planned state (its new state is null or the prior), a plan's
 * proposed one when it planned nothing. */
static const char *after_of(const store_change_row *c)
{
    int is_null_text = 0;
    if (c->rpc && strcmp(c->rpc, "PlanResourceChange") == 0) {
        const char *p = c->replace_planned ? c->replace_planned : c->planned;
        is_null_text = !p || strcmp(p, "null") == 0;
        return c->failed && is_null_text && c->proposed ? c->proposed : p;
    }
    if (c->failed && c->rpc && strcmp(c->rpc, "ApplyResourceChange") == 0 && c->planned)
        return c->planned;
    return c->new_state ? c->new_state : c->planned;
}

/* The state before: for the create half of a replacement carried out, the
 * object the other apply destroyed. */
static const char *prior_of(const store_change_row *c)
{
    return c->destroyed_prior ? c->destroyed_prior : c->prior;
}

static enum analysis_action action_of(const sj_node *prior, const sj_node *after, const sj_node *rr)
{
    if (is_null(prior) && is_null(after))
        return ANALYSIS_ACTION_NOOP;
    if (is_null(prior))
        return ANALYSIS_ACTION_CREATE;
    if (is_null(after))
        return ANALYSIS_ACTION_DELETE;
    if (rr && rr->kind == SJ_ARRAY && rr->n > 0)
        return ANALYSIS_ACTION_REPLACE;
    if (sj_equal(prior, after))
        return ANALYSIS_ACTION_NOOP;
    return ANALYSIS_ACTION_UPDATE;
}

const char *analysis_action_name(enum analysis_action a)
{
    switch (a) {
    case ANALYSIS_ACTION_NOOP:
        return "no-op";
    case ANALYSIS_ACTION_CREATE:
        return "create";
    case ANALYSIS_ACTION_DELETE:
        return "delete";
    case ANALYSIS_ACTION_UPDATE:
        return "update";
    case ANALYSIS_ACTION_REPLACE:
        return "replace";
    case ANALYSIS_ACTION_READ:
        return "read";
    }
    return "?";
}

int analysis_change_action(const store_change_row *c, enum analysis_action *out)
{
    sj_doc *dp = NULL, *dn = NULL, *dr = NULL;
    const sj_node *prior, *after, *rr;
    int rc = parse_opt(prior_of(c), &dp, &prior);
    if (!rc)
        rc = parse_opt(after_of(c), &dn, &after);
    if (!rc)
        rc = parse_opt(c->requires_replace, &dr, &rr);
    if (!rc)
        *out = c->rpc && strcmp(c->rpc, "ReadDataSource") == 0 ? ANALYSIS_ACTION_READ
               : c->destroyed_prior && !is_null(prior) && !is_null(after)
                   ? ANALYSIS_ACTION_REPLACE
                   : action_of(prior, after, rr);
    sj_free(dp);
    sj_free(dn);
    sj_free(dr);
    return rc;
}

int analysis_render_change(const store_change_row *c, int flags, tftap_buf *out)
{
    sj_doc *dp = NULL, *dn = NULL, *dr = NULL, *dd = NULL, *ds = NULL;
    const sj_node *prior, *after, *rr, *diags, *sch;
    tftap_buf path = TFTAP_BUF_INIT, name = TFTAP_BUF_INIT;
    int apply = c->rpc && strcmp(c->rpc, "ApplyResourceChange") == 0;
    int read = c->rpc && strcmp(c->rpc, "ReadResource") == 0;
    int dread = c->rpc && strcmp(c->rpc, "ReadDataSource") == 0;
    const char *after_text = after_of(c);
    int rc = parse_opt(prior_of(c), &dp, &prior);
    if (!rc)
        rc = parse_opt(after_text, &dn, &after);
    if (!rc)
        rc = parse_opt(c->requires_replace, &dr, &rr);
    if (!rc)
        rc = parse_opt(c->diagnostics, &dd, &diags);
    if (!rc && parse_opt(c->block_schema, &ds, &sch) != 0)
        ds = NULL; /* a schema we cannot read: render without it */
    if (rc)
        goto done;
    struct rctx x = {out, flags & ANALYSIS_RENDER_COLOR, rr};
    int replace = ((rr && rr->kind == SJ_ARRAY && rr->n > 0) || c->destroyed_prior) &&
                  !is_null(prior) && !is_null(after);
    /* A failed call tells what it attempted. */
    int failed = c->failed;
    char mark;
    const char *verb;
    if (dread) {
        mark = '<';
        verb = is_null(after) || failed ? "could not be read" : "was read";
    } else if (is_null(prior) && is_null(after)) {
        mark = ' ';
        verb = failed ? "failed" : apply ? "was not created" : "has no object";
    } else if (is_null(prior)) {
        mark = '+';
        verb = failed  ? (apply  ? "failed to be created"
                          : read ? "could not be read"
                                 : "could not be planned for creation")
               : apply ? "has been created"
               : read  ? "was read"
                       : "will be created";
    } else if (is_null(after)) {
        mark = '-';
        verb = failed  ? (apply  ? "failed to be destroyed"
                          : read ? "could not be read"
                                 : "could not be planned for destruction")
               : apply ? "has been destroyed"
               : read  ? "no longer exists"
                       : "will be destroyed";
    } else if (replace) {
        mark = 'r';
        verb = failed               ? (apply ? "failed to be replaced" : "could not be planned")
               : c->destroyed_prior ? "has been replaced"
                                    : "must be replaced";
    } else if (sj_equal(prior, after)) {
        mark = ' ';
        verb = failed  ? (read    ? "could not be read"
                          : apply ? "failed"
                                  : "could not be planned")
               : read  ? "was read, unchanged"
               : apply ? "was applied without changes"
                       : "has no changes";
    } else {
        mark = '~';
        verb = failed  ? (apply  ? "failed to be updated in-place"
                          : read ? "could not be read"
                                 : "could not be planned for update")
               : apply ? "has been updated in-place"
               : read  ? "has changed outside of the configuration"
                       : "will be updated in-place";
    }
    int unrecorded = (flags & ANALYSIS_RENDER_UNRECORDED) && c->in_flight && !failed;
    if (unrecorded)
        verb = mark == '+'   ? (apply ? "was being created" : "was being planned for creation")
               : mark == '-' ? (apply ? "was being destroyed" : "was being planned for destruction")
               : mark == '~'
                   ? (apply ? "was being updated in-place" : "was being planned for update")
               : mark == 'r' ? (apply ? "was being replaced" : "was being planned for replacement")
                             : (apply ? "was being applied" : "was being planned");
    const char *type = c->type_name ? c->type_name : "?";
    if (x.color)
        tftap_buf_puts(out, "\033[1m");
    if (c->address && c->address_note) /* paired among identical instances */
        tftap_buf_printf(out, "  # %s (%s) %s", c->address, c->address_note, verb);
    else if (c->address)
        tftap_buf_printf(out, "  # %s %s", c->address, verb);
    else
        tftap_buf_printf(out, "  # %s (call %lld, address unknown) %s", type, (long long)c->call_id,
                         verb);
    if (x.color)
        tftap_buf_puts(out, "\033[0m");
    tftap_buf_printf(out, "  [%s]\n", c->rpc ? c->rpc : "?");
    if (unrecorded)
        tftap_buf_puts(out, "  # its answer was not recorded (a gap in the record): what it asked "
                            "for is shown\n");
    if (!c->address)
        tftap_buf_printf(out, "  # (not matched to an address: %s)\n",
                         c->address_note ? c->address_note
                                         : "addresses were not looked up for this run");

    resource_name(c->address, c->type_name, &name);
    /* "-/+" and "<=" take the indent's place */
    indent(&x, mark == 'r' ? 0 : mark == '<' ? 1 : 2);
    put_mark(&x, mark);
    tftap_buf_printf(out, " %s \"%s\" \"%s\" {\n", dread ? "data" : "resource", type,
                     tftap_buf_cstr(&name));
    const sj_node *schema = sj_root(ds);
    if (schema && schema->kind != SJ_OBJECT)
        schema = NULL;
    struct analysis_hint top = {NULL, schema ? sj_get(schema, "attributes") : NULL, NULL};
    if (top.attrs && top.attrs->kind != SJ_ARRAY)
        top.attrs = NULL;
    tftap_buf_putc(&path, '\0');
    tftap_buf_reset(&path);
    if ((mark == '+' || mark == '<') && is_plain(after, SJ_OBJECT)) {
        whole_members(&x, 1, '+', after, &top, schema);
    } else if (mark == '-' && is_plain(prior, SJ_OBJECT)) {
        whole_members(&x, 1, '-', prior, &top, schema);
    } else if ((mark == '+' || mark == '<') && !is_null(after)) {
        put_whole(&x, 1, '+', NULL, after, 0, 0, &top);
    } else if (mark == '-') {
        put_whole(&x, 1, '-', NULL, prior, 0, 0, &top);
    } else if (is_plain(prior, SJ_OBJECT) && is_plain(after, SJ_OBJECT)) {
        diff_members(&x, 1, prior, after, &path, &top, schema);
    } else if (!is_null(prior) || !is_null(after)) {
        put_diff(&x, 1, NULL, prior, after, 0, &path, 0, &top);
    }
    tftap_buf_puts(out, "    }\n");

    if (diags && diags->kind == SJ_ARRAY) {
        for (const sj_node *dg = diags->child; dg; dg = dg->next) {
            const sj_node *sev = sj_get(dg, "severity"), *sum = sj_get(dg, "summary"),
                          *det = sj_get(dg, "detail"), *attr = sj_get(dg, "attribute");
            const sj_node *ap = attr ? sj_get(attr, "path") : NULL;
            tftap_buf_printf(out, "  %s: %.*s",
                             sev && sev->kind == SJ_STRING && strcmp(sev->str, "WARNING") == 0
                                 ? "Warning"
                                 : "Error",
                             sum && sum->kind == SJ_STRING ? (int)sum->len : 0,
                             sum && sum->kind == SJ_STRING ? sum->str : "");
            if (ap && ap->kind == SJ_STRING && ap->len)
                tftap_buf_printf(out, " (at %.*s)", (int)ap->len, ap->str);
            tftap_buf_putc(out, '\n');
            if (det && det->kind == SJ_STRING && det->len)
                tftap_buf_printf(out, "    %.*s\n", (int)det->len, det->str);
        }
    }
    if (c->failed && c->in_flight)
        tftap_buf_puts(out, "  # no answer: the call was still in flight when the provider or "
                            "the run ended\n");
    else if (c->has_status && c->status_code != 0) {
        tftap_buf_puts(out, "  # the call failed: ");
        if (c->status_name)
            tftap_buf_puts(out, c->status_name);
        else
            tftap_buf_printf(out, "gRPC status %d", c->status_code);
        if (c->status_message && *c->status_message)
            tftap_buf_printf(out, " (%s)", c->status_message);
        tftap_buf_putc(out, '\n');
    }
    if (tftap_buf_failed(out))
        rc = TFTAP_ENOMEM;
done:
    sj_free(dp);
    sj_free(dn);
    sj_free(dr);
    sj_free(dd);
    sj_free(ds);
    tftap_buf_done(&path);
    tftap_buf_done(&name);
    return rc;
}
