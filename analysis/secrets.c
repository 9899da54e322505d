/* analysis: secrets as core sees them. A provider never learns which
 * values core treats as sensitive (marks do not cross the plugin
 * protocol), so the recorder redacts only what the provider's schema
 * marks. What the configuration marks (a sensitive variable or output,
 * sensitive(), anything computed from them) core records in the plan and
 * the state: before_sensitive / after_sensitive, sensitive_values,
 * sensitive_attributes, sensitive outputs and variables. Read from the
 * documents tftap run has at the end, those give the values at marked
 * paths of each instance, and the strings they hold. Every call of the
 * run is then redacted at those paths, and wherever else one of those
 * strings appears (a secret copied into another provider's plain
 * attribute is the same secret), the way the recorder redacts. A plan not
 * saved marks nothing of a new instance: the configuration's marks
 * (analysis_secrets_add_config) stand in for them. A provider's words (a
 * status message, diagnostics) keep their text, the secrets they quote
 * cut out. */
#include "config.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/analysis_int.h"
#include "store/store.h"

/* A variable's value at least this long is looked for inside strings:
 * a template ("prefix-${var.secret}") or a change of case (upper())
 * carries it there, and a plan not saved marks neither. */
#define SECRET_INSIDE_MIN 6

/* A set of byte strings (open addressing, FNV-1a). */
struct strset {
    struct entry {
        char *s;
        size_t n;
        uint64_t h;
    } * e;
    size_t cap, n;
};

static uint64_t fnv(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static const struct entry *set_find(const struct strset *set, const char *s, size_t n, uint64_t h)
{
    if (set->cap == 0)
        return NULL;
    for (size_t i = h & (set->cap - 1);; i = (i + 1) & (set->cap - 1)) {
        const struct entry *e = &set->e[i];
        if (!e->s)
            return NULL;
        if (e->h == h && e->n == n && memcmp(e->s, s, n) == 0)
            return e;
    }
}

static int set_has(const struct strset *set, const char *s, size_t n)
{
    return set_find(set, s, n, fnv(s, n)) != NULL;
}

static int set_add(struct strset *set, const char *s, size_t n)
{
    uint64_t h = fnv(s, n);
    if (set_find(set, s, n, h))
        return 0;
    if ((set->n + 1) * 2 > set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 64;
        struct entry *e = calloc(cap, sizeof *e);
        if (!e)
            return TFTAP_ENOMEM;
        for (size_t i = 0; i < set->cap; i++) {
            if (!set->e[i].s)
                continue;
            size_t j = set->e[i].h & (cap - 1);
            while (e[j].s)
                j = (j + 1) & (cap - 1);
            e[j] = set->e[i];
        }
        free(set->e);
        set->e = e;
        set->cap = cap;
    }
    char *copy = malloc(n + 1);
    if (!copy)
        return TFTAP_ENOMEM;
    memcpy(copy, s, n);
    copy[n] = '\0';
    size_t i = h & (set->cap - 1);
    while (set->e[i].s)
        i = (i + 1) & (set->cap - 1);
    set->e[i] = (struct entry){copy, n, h};
    set->n++;
    return 0;
}

static void set_free(struct strset *set)
{
    for (size_t i = 0; i < set->cap; i++)
        free(set->e[i].s);
    free(set->e);
    *set = (struct strset){0};
}

/* An attribute of a root module resource the configuration marks
 * (analysis_secrets_add_config): always, or when what it refers to is. */
struct config_mark {
    char *resource, *attr;         /* "TYPE.NAME" or "data.TYPE.NAME"; a top-level attribute */
    char *ref_resource, *ref_attr; /* NULL: marked as it is */
};

struct analysis_secrets {
    struct strset values;    /* the secret strings */
    struct strset inside;    /* variables' values: secret inside other strings too */
    struct strset marks;     /* "ADDRESS\n" + path (sj_path_*) */
    struct strset addresses; /* the instances marks name */
    struct config_mark *config;
    size_t nconfig, capconfig;
    int failed;
};

analysis_secrets *analysis_secrets_new(void)
{
    return calloc(1, sizeof(analysis_secrets));
}

void analysis_secrets_free(analysis_secrets *a)
{
    if (!a)
        return;
    set_free(&a->values);
    set_free(&a->inside);
    set_free(&a->marks);
    set_free(&a->addresses);
    for (size_t i = 0; i < a->nconfig; i++) {
        free(a->config[i].resource);
        free(a->config[i].attr);
        free(a->config[i].ref_resource);
        free(a->config[i].ref_attr);
    }
    free(a->config);
    free(a);
}

int analysis_secrets_add_config(analysis_secrets *a, const char *resource, const char *attr,
                                const char *ref_resource, const char *ref_attr)
{
    if (a->nconfig == a->capconfig) {
        size_t cap = a->capconfig ? a->capconfig * 2 : 16;
        struct config_mark *v = realloc(a->config, cap * sizeof *v);
        if (!v)
            goto nomem;
        a->config = v;
        a->capconfig = cap;
    }
    struct config_mark m = {strdup(resource), strdup(attr), NULL, NULL};
    if (ref_resource && ref_attr) {
        m.ref_resource = strdup(ref_resource);
        m.ref_attr = strdup(ref_attr);
    }
    if (!m.resource || !m.attr || (ref_resource && ref_attr && (!m.ref_resource || !m.ref_attr))) {
        free(m.resource);
        free(m.attr);
        free(m.ref_resource);
        free(m.ref_attr);
        goto nomem;
    }
    a->config[a->nconfig++] = m;
    return 0;
nomem:
    a->failed = 1;
    return TFTAP_ENOMEM;
}

size_t analysis_secrets_count(const analysis_secrets *a)
{
    return a ? a->values.n : 0;
}

int analysis_secrets_add_value(analysis_secrets *a, const char *s, size_t n)
{
    if (n == 0)
        return 0; /* an empty string reveals nothing, and is everywhere */
    int rc = set_add(&a->values, s, n);
    a->failed |= rc != 0;
    return rc;
}

int analysis_secrets_add_variable(analysis_secrets *a, const char *s, size_t n)
{
    int rc = analysis_secrets_add_value(a, s, n);
    /* Long enough not to be a word of any string. */
    if (!rc && n >= SECRET_INSIDE_MIN) {
        rc = set_add(&a->inside, s, n);
        a->failed |= rc != 0;
    }
    return rc;
}

/* Every string a value holds (its map keys are names, not values). */
static void strings_below(analysis_secrets *a, const sj_node *v, int variable, unsigned depth)
{
    if (!v || depth > TFTAP_JSON_MAX_DEPTH)
        return;
    if (v->kind == SJ_STRING) {
        if (variable)
            analysis_secrets_add_variable(a, v->str, v->len);
        else
            analysis_secrets_add_value(a, v->str, v->len);
    }
    for (const sj_node *c = v->child; c; c = c->next)
        strings_below(a, c, variable, depth + 1);
}

/* Every string a value holds (its map keys are names, not values); a
 * variable's (1) are looked for inside other strings too. */
static void add_strings(analysis_secrets *a, const sj_node *v, int variable)
{
    strings_below(a, v, variable, 0);
}

static void add_mark(analysis_secrets *a, const char *address, size_t alen, const tftap_buf *path)
{
    tftap_buf k = TFTAP_BUF_INIT;
    tftap_buf_append(&k, address, alen);
    tftap_buf_putc(&k, '\n');
    tftap_buf_append(&k, path->data ? path->data : "", path->len);
    if (tftap_buf_failed(&k) || set_add(&a->marks, k.data, k.len) != 0 ||
        set_add(&a->addresses, address, alen) != 0)
        a->failed = 1;
    tftap_buf_done(&k);
}

static int is_true(const sj_node *n)
{
    return n && n->kind == SJ_BOOL && n->boolean;
}

/* A value beside the structure core marks it with (sensitive_values,
 * before_sensitive, after_sensitive): true marks the value there and all
 * of it below; objects and arrays mark their members and elements. */
static void walk_marks(analysis_secrets *a, const sj_node *addr, const sj_node *v,
                       const sj_node *mirror, tftap_buf *path, unsigned depth)
{
    if (!mirror || depth > TFTAP_JSON_MAX_DEPTH)
        return;
    if (is_true(mirror)) {
        if (addr)
            add_mark(a, addr->str, addr->len, path);
        add_strings(a, v, 0);
        return;
    }
    size_t mark = path->len, i = 0;
    if (mirror->kind == SJ_OBJECT) {
        for (const sj_node *m = mirror->child; m; m = m->next) {
            sj_path_member(path, m->key, m->key_len);
            walk_marks(a, addr, v ? sj_get_n(v, m->key, m->key_len) : NULL, m, path, depth + 1);
            path->len = mark;
        }
    } else if (mirror->kind == SJ_ARRAY) {
        for (const sj_node *m = mirror->child; m; m = m->next, i++) {
            sj_path_index(path, i);
            walk_marks(a, addr, v ? sj_at(v, i) : NULL, m, path, depth + 1);
            path->len = mark;
        }
    }
}

static void marked_value(analysis_secrets *a, const sj_node *addr, const sj_node *v,
                         const sj_node *mirror)
{
    tftap_buf path = TFTAP_BUF_INIT;
    walk_marks(a, addr && addr->kind == SJ_STRING ? addr : NULL, v, mirror, &path, 0);
    a->failed |= tftap_buf_failed(&path);
    tftap_buf_done(&path);
}

/* Outputs as `show -json` and the raw state write them:
 * {"name": {"sensitive": true, "value": ...}}. */
static void outputs(analysis_secrets *a, const sj_node *outs)
{
    if (!outs || outs->kind != SJ_OBJECT)
        return;
    for (const sj_node *o = outs->child; o; o = o->next)
        if (is_true(sj_get(o, "sensitive")))
            add_strings(a, sj_get(o, "value"), 0);
}

/* A module of `show -json`'s state form and its children. */
static void module_values(analysis_secrets *a, const sj_node *mod, unsigned depth)
{
    if (!mod || depth > 64)
        return;
    const sj_node *res = sj_get(mod, "resources");
    if (res && res->kind == SJ_ARRAY)
        for (const sj_node *r = res->child; r; r = r->next)
            marked_value(a, sj_get(r, "address"), sj_get(r, "values"),
                         sj_get(r, "sensitive_values"));
    const sj_node *kids = sj_get(mod, "child_modules");
    if (kids && kids->kind == SJ_ARRAY)
        for (const sj_node *k = kids->child; k; k = k->next)
            module_values(a, k, depth + 1);
}

/* {"values": {"root_module": ..., "outputs": ...}} and the like. */
static void state_values(analysis_secrets *a, const sj_node *values)
{
    module_values(a, sj_get(values, "root_module"), 0);
    outputs(a, sj_get(values, "outputs"));
}

/* A step of a cty path as the raw state writes it:
 * {"type": "get_attr", "value": "name"} or
 * {"type": "index", "value": {"value": KEY, "type": "string"|"number"}}.
 * The value under it, or NULL (the path then still marks). */
static const sj_node *path_step(const sj_node *step, const sj_node *v, tftap_buf *path)
{
    const sj_node *type = sj_get(step, "type"), *val = sj_get(step, "value");
    if (!type || type->kind != SJ_STRING || !val)
        return NULL;
    if (strcmp(type->str, "get_attr") == 0 && val->kind == SJ_STRING) {
        sj_path_member(path, val->str, val->len);
        return v ? sj_get_n(v, val->str, val->len) : NULL;
    }
    const sj_node *key = sj_get(val, "value");
    if (strcmp(type->str, "index") == 0 && key && key->kind == SJ_STRING) {
        sj_path_member(path, key->str, key->len);
        return v ? sj_get_n(v, key->str, key->len) : NULL;
    }
    if (strcmp(type->str, "index") == 0 && key && key->kind == SJ_NUMBER) {
        size_t i = (size_t)strtoull(key->str, NULL, 10);
        sj_path_index(path, i);
        return v ? sj_at(v, i) : NULL;
    }
    return NULL;
}

/* The raw state (a terraform.tfstate, `state pull`): each instance's
 * sensitive_attributes are paths into its attributes. */
static void raw_state(analysis_secrets *a, const sj_node *root)
{
    const sj_node *res = sj_get(root, "resources");
    tftap_buf addr = TFTAP_BUF_INIT, path = TFTAP_BUF_INIT;
    for (const sj_node *r = res && res->kind == SJ_ARRAY ? res->child : NULL; r; r = r->next) {
        const sj_node *type = sj_get(r, "type"), *name = sj_get(r, "name"),
                      *mode = sj_get(r, "mode"), *module = sj_get(r, "module"),
                      *insts = sj_get(r, "instances");
        if (!type || type->kind != SJ_STRING || !name || name->kind != SJ_STRING || !insts ||
            insts->kind != SJ_ARRAY)
            continue;
        int data = mode && mode->kind == SJ_STRING && strcmp(mode->str, "data") == 0;
        for (const sj_node *in = insts->child; in; in = in->next) {
            const sj_node *sens = sj_get(in, "sensitive_attributes"),
                          *attrs = sj_get(in, "attributes"), *key = sj_get(in, "index_key");
            if (!sens || sens->kind != SJ_ARRAY || sens->n == 0)
                continue;
            tftap_buf_reset(&addr);
            analysis_raw_address(&addr, module, data, type, name, key);
            for (const sj_node *p = sens->child; p; p = p->next) {
                /* A path: its steps (OpenTofu, Terraform before 1.11), or
                 * an object holding them as "path" (newer Terraform). */
                const sj_node *steps = p->kind == SJ_ARRAY ? p : sj_get(p, "path");
                if (!steps || steps->kind != SJ_ARRAY)
                    continue;
                tftap_buf_reset(&path);
                tftap_buf_puts(&path, "");
                const sj_node *v = attrs;
                int ok = 1;
                for (const sj_node *st = steps->child; st && ok; st = st->next) {
                    size_t before = path.len;
                    v = path_step(st, v, &path);
                    ok = path.len > before;
                }
                if (!ok)
                    continue;
                add_mark(a, addr.data, addr.len, &path);
                add_strings(a, v, 0);
            }
        }
    }
    a->failed |= tftap_buf_failed(&addr) || tftap_buf_failed(&path);
    tftap_buf_done(&addr);
    tftap_buf_done(&path);
    outputs(a, sj_get(root, "outputs"));
}

/* `show -json` of a saved plan: each change's before and after beside
 * what core marked in them, the states it holds, the outputs, and the
 * values of the variables the configuration marks sensitive. */
static void plan(analysis_secrets *a, const sj_node *root)
{
    static const char *const lists[] = {"resource_changes", "resource_drift"};
    for (size_t l = 0; l < 2; l++) {
        const sj_node *rcs = sj_get(root, lists[l]);
        for (const sj_node *r = rcs && rcs->kind == SJ_ARRAY ? rcs->child : NULL; r; r = r->next) {
            const sj_node *ch = sj_get(r, "change"), *addr = sj_get(r, "address");
            marked_value(a, addr, sj_get(ch, "before"), sj_get(ch, "before_sensitive"));
            marked_value(a, addr, sj_get(ch, "after"), sj_get(ch, "after_sensitive"));
        }
    }
    const sj_node *ocs = sj_get(root, "output_changes");
    for (const sj_node *o = ocs && ocs->kind == SJ_OBJECT ? ocs->child : NULL; o; o = o->next) {
        marked_value(a, NULL, sj_get(o, "before"), sj_get(o, "before_sensitive"));
        marked_value(a, NULL, sj_get(o, "after"), sj_get(o, "after_sensitive"));
    }
    state_values(a, sj_get(sj_get(root, "prior_state"), "values"));
    state_values(a, sj_get(root, "planned_values"));
    const sj_node *vars = sj_get(root, "variables"),
                  *decl = sj_get(sj_get(sj_get(root, "configuration"), "root_module"), "variables");
    for (const sj_node *v = vars && vars->kind == SJ_OBJECT ? vars->child : NULL; v; v = v->next)
        if (is_true(sj_get(sj_get_n(decl, v->key, v->key_len), "sensitive")))
            add_strings(a, sj_get(v, "value"), 1);
}

int analysis_secrets_add_doc(analysis_secrets *a, const char *json, size_t len)
{
    sj_doc *doc = NULL;
    int rc = sj_parse(json, len, 0, &doc);
    if (rc)
        return rc;
    const sj_node *root = sj_root(doc);
    if (root->kind == SJ_OBJECT && !sj_get(root, "tftap_config")) {
        if (!sj_get(root, "format_version") && sj_get(root, "resources"))
            raw_state(a, root);
        else {
            plan(a, root);
            state_values(a, sj_get(root, "values"));
        }
    }
    sj_free(doc);
    return a->failed ? TFTAP_ENOMEM : 0;
}

/* ---- the run redacted ---------------------------------------------------- */

/* The members of a call's request and response that hold the resource's
 * value, whose paths the marks name. */
struct roots {
    const char *rpc;
    const char *request[3];
    const char *response[1];
};
static const struct roots roots_of[] = {
    {"PlanResourceChange", {"prior_state", "proposed_new_state", "config"}, {"planned_state"}},
    {"ApplyResourceChange", {"prior_state", "planned_state", "config"}, {"new_state"}},
    {"ReadResource", {"current_state"}, {"new_state"}},
    {"ReadDataSource", {"config"}, {"state"}},
    {"UpgradeResourceState", {NULL}, {"upgraded_state"}},
    {"ValidateResourceConfig", {"config"}, {NULL}},
    {"ValidateResourceTypeConfig", {"config"}, {NULL}},
    {"ValidateDataResourceConfig", {"config"}, {NULL}},
    {"ValidateDataSourceConfig", {"config"}, {NULL}},
};

struct redacting {
    store *s;
    const analysis_secrets *a;
    const char *address; /* the call's, when marks name it */
    tftap_buf key;
    int64_t counts[2];
    int64_t calls;
    /* The hashes of the values the recorder redacted (the schema's marks):
     * a string with one of them is that secret, copied. */
    struct strset hashes;
    tftap_hmac *h;
    tftap_buf text;
    tftap_buf message; /* a message's text, its secrets cut out */
    /* What the configuration marks, resolved against the run: the
     * attributes its providers' schemas mark ("TYPE\nATTR", "data.TYPE\nATTR",
     * seen redacted in its calls), which marks hold (on), and the marked
     * paths by resource ("TYPE.NAME\n" + path) and, for a call no address
     * names (a new instance in a plan not saved), by type ("*TYPE\n" +
     * path). */
    struct strset schema_attrs;
    unsigned char *on;
    struct strset config_marks;
    tftap_buf config_key; /* the call's key into config_marks; empty: none */
    /* Strings found secret in the run's calls: the values at the paths the
     * configuration marks, a function's result from a secret argument. */
    struct strset found;
};

/* Where s holds t (ignoring ASCII case when fold), from position at on:
 * its offset, or -1. */
static long find(const char *s, size_t n, size_t at, const char *t, size_t k, int fold)
{
    for (size_t i = at; k <= n && i <= n - k; i++) {
        size_t j = 0;
        while (j < k && (fold ? tolower((unsigned char)s[i + j]) == tolower((unsigned char)t[j])
                              : s[i + j] == t[j]))
            j++;
        if (j == k)
            return (long)i;
    }
    return -1;
}

/* What a message or an argument shows where a secret was, as core does. */
static const char hidden[] = "(sensitive value)";

/* Every occurrence of t in *text replaced by hidden; how many. */
static int64_t cut_out(tftap_buf *text, const char *t, size_t k, int fold)
{
    int64_t cut = 0;
    long at = 0;
    while (k > 0 &&
           (at = find(text->data ? text->data : "", text->len, (size_t)at, t, k, fold)) >= 0) {
        tftap_buf c = TFTAP_BUF_INIT;
        tftap_buf_append(&c, text->data, (size_t)at);
        tftap_buf_puts(&c, hidden);
        tftap_buf_append(&c, text->data + at + k, text->len - (size_t)at - k);
        if (tftap_buf_failed(&c)) {
            text->failed = 1;
            tftap_buf_done(&c);
            break;
        }
        tftap_buf_done(text);
        *text = c;
        at += (long)(sizeof hidden - 1);
        cut++;
    }
    return cut;
}

/* Is s, whole, a secret: one of the strings known, or one the recorder
 * redacted (its hash)? */
static int equal_secret(struct redacting *r, const char *s, size_t n)
{
    if (set_has(&r->a->values, s, n) || set_has(&r->found, s, n))
        return 1;
    if (r->hashes.n == 0 || !r->h)
        return 0;
    char hex[65];
    tftap_buf_reset(&r->text);
    tftap_buf_json_string(&r->text, s, n);
    return !tftap_buf_failed(&r->text) &&
           tftap_hmac_hex(r->h, r->text.data, r->text.len, hex) == 0 &&
           set_has(&r->hashes, hex, 64);
}

/* A value's string: a secret whole, or holding a variable's value (a
 * template, upper()), which core marks whole. */
static int is_secret(void *ctx, const char *s, size_t n)
{
    struct redacting *r = ctx;
    if (equal_secret(r, s, n))
        return 1;
    const struct strset *in = &r->a->inside;
    for (size_t i = 0; in->n && i < in->cap; i++)
        if (in->e[i].s && find(s, n, 0, in->e[i].s, in->e[i].n, 1) >= 0)
            return 1;
    return 0;
}

/* A message's free text (a diagnostic's summary and detail, its attribute
 * path, a function's error, a gRPC status): the words stay, the secrets
 * they quote are cut out. A text that is a secret whole goes whole; a
 * variable's value anywhere (ignoring case, as in values), and any other
 * secret long enough not to be a word of the message, where it appears.
 * Into out as plain text; how many were cut. */
static int64_t cut_secrets(struct redacting *r, const char *s, size_t n, tftap_buf *out)
{
    tftap_buf_reset(out);
    if (n > 0 && equal_secret(r, s, n)) {
        tftap_buf_puts(out, hidden);
        return 1;
    }
    tftap_buf_append(out, s, n);
    int64_t cut = 0;
    const struct strset *sets[3] = {&r->a->inside, &r->a->values, &r->found};
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; sets[k]->n && i < sets[k]->cap; i++) {
            const struct entry *e = &sets[k]->e[i];
            if (e->s && e->n >= SECRET_INSIDE_MIN)
                cut += cut_out(out, e->s, e->n, k == 0);
        }
    return cut;
}

static int64_t cut_text(void *ctx, const char *s, size_t n, tftap_buf *out)
{
    struct redacting *r = ctx;
    int64_t cut = cut_secrets(r, s, n, &r->message);
    if (tftap_buf_failed(&r->message))
        out->failed = 1;
    else
        tftap_buf_json_string(out, r->message.data ? r->message.data : "", r->message.len);
    return cut;
}

static int add_hash(void *ctx, const char *hmac)
{
    struct redacting *r = ctx;
    return hmac && strlen(hmac) == 64 && set_add(&r->hashes, hmac, 64) != 0 ? TFTAP_ENOMEM : 0;
}

/* The hashes of a call's {"$sensitive":"hmac-sha256:HEX"} values. */
static int collect_hashes(void *ctx, const store_value_call *c)
{
    static const char pre[] = "{\"$sensitive\":\"hmac-sha256:";
    struct redacting *r = ctx;
    const char *sides[2] = {c->request_json, c->response_json};
    for (int i = 0; i < 2; i++) {
        const char *p = sides[i];
        while (p && (p = strstr(p, pre)) != NULL) {
            p += sizeof pre - 1;
            size_t n = 0;
            while (n < 64 && tftap_hex_digit((unsigned char)p[n]) >= 0)
                n++;
            if (n == 64 && set_add(&r->hashes, p, 64) != 0)
                return TFTAP_ENOMEM;
        }
    }
    return 0;
}

static int is_marked(void *ctx, const char *path, size_t len)
{
    struct redacting *r = ctx;
    if (r->address) {
        tftap_buf_reset(&r->key);
        tftap_buf_puts(&r->key, r->address);
        tftap_buf_putc(&r->key, '\n');
        tftap_buf_append(&r->key, path, len);
        if (!tftap_buf_failed(&r->key) && set_has(&r->a->marks, r->key.data, r->key.len))
            return 1;
    }
    if (r->config_key.len == 0)
        return 0;
    tftap_buf_reset(&r->key);
    tftap_buf_append(&r->key, r->config_key.data, r->config_key.len);
    tftap_buf_append(&r->key, path, len);
    return !tftap_buf_failed(&r->key) && set_has(&r->config_marks, r->key.data, r->key.len);
}

static void mac(void *ctx, const char *json, size_t len, char out[65])
{
    struct redacting *r = ctx;
    if (!r->h || tftap_hmac_hex(r->h, json, len, out) != 0)
        memset(out, '0', 64); /* no key (a bundle: it holds nothing in clear), or OpenSSL failed */
    out[64] = '\0';
}

static int redact_side(struct redacting *r, const char *json, const char *const *roots,
                       size_t nroots, tftap_buf *out, int *changed, int bit)
{
    if (!json)
        return 0;
    sj_doc *doc = NULL;
    if (sj_parse(json, strlen(json), 0, &doc) != 0)
        return 0; /* not JSON: a decode error's text, nothing of a value */
    /* A provider's words: its diagnostics, a function's error. */
    static const char *const texts[] = {"diagnostics", "error"}, *const verbatim[] = {"severity"};
    sj_redactor rr = {.secret = is_secret,
                      .marked = r->address || r->config_key.len ? is_marked : NULL,
                      .mac = mac,
                      .ctx = r,
                      .roots = roots,
                      .nroots = nroots,
                      .text = cut_text,
                      .texts = texts,
                      .ntexts = sizeof texts / sizeof texts[0],
                      .verbatim = verbatim,
                      .nverbatim = 1};
    int64_t before = r->counts[0] + r->counts[1];
    int rc = sj_redact(sj_root(doc), &rr, out, r->counts);
    sj_free(doc);
    if (rc == 0 && r->counts[0] + r->counts[1] > before)
        *changed |= bit;
    return rc;
}

static const struct roots *roots_for(const char *rpc)
{
    for (size_t i = 0; rpc && i < sizeof roots_of / sizeof roots_of[0]; i++)
        if (strcmp(roots_of[i].rpc, rpc) == 0)
            return &roots_of[i];
    return NULL;
}

static int is_data_rpc(const char *rpc)
{
    return rpc &&
           (strcmp(rpc, "ReadDataSource") == 0 || strcmp(rpc, "ValidateDataResourceConfig") == 0 ||
            strcmp(rpc, "ValidateDataSourceConfig") == 0);
}

/* A resource address's type: "TYPE" of "TYPE.NAME", "data.TYPE" of
 * "data.TYPE.NAME". Its length in *n. */
static const char *type_of(const char *resource, size_t *n)
{
    const char *dot = strrchr(resource, '.');
    *n = dot ? (size_t)(dot - resource) : strlen(resource);
    return resource;
}

/* The call's key into config_marks (r->config_key, empty when none): its
 * resource when an address names it (a root module instance, its key
 * dropped: the configuration marks every instance of a block alike), its
 * type when none does (a new instance of a plan not saved: whichever of
 * the type's blocks marks an attribute marks it). An instance a document
 * marks too: a state before the run does not mark what the run newly
 * derives from a secret. */
static void config_key(struct redacting *r, const store_value_call *c)
{
    tftap_buf *k = &r->config_key;
    tftap_buf_reset(k);
    if (r->config_marks.n == 0)
        return;
    if (c->address && *c->address) {
        if (strncmp(c->address, "module.", 7) == 0)
            return; /* the configuration read is the root module's */
        size_t n = strcspn(c->address, "[");
        tftap_buf_append(k, c->address, n);
    } else if (c->type_name && *c->type_name) {
        tftap_buf_printf(k, "*%s%s", is_data_rpc(c->rpc) ? "data." : "", c->type_name);
    } else {
        return;
    }
    tftap_buf_putc(k, '\n');
    if (tftap_buf_failed(k))
        tftap_buf_reset(k);
}

/* Every string a value holds but a redacted or unknown one's, into set. */
static int add_strings_to(struct strset *set, const sj_node *v, unsigned depth)
{
    if (!v || depth > TFTAP_JSON_MAX_DEPTH || sj_is_sensitive(v) || sj_is_unknown(v))
        return 0;
    if (v->kind == SJ_STRING && v->len > 0 && set_add(set, v->str, v->len) != 0)
        return TFTAP_ENOMEM;
    for (const sj_node *c = v->child; c; c = c->next)
        if (add_strings_to(set, c, depth + 1) != 0)
            return TFTAP_ENOMEM;
    return 0;
}

/* Does a value hold a secret: a redacted value, or a string that is one? */
static int holds_secret(struct redacting *r, const sj_node *v, unsigned depth)
{
    if (!v || depth > TFTAP_JSON_MAX_DEPTH)
        return 0;
    if (sj_is_sensitive(v))
        return 1;
    if (v->kind == SJ_STRING && v->len > 0 && is_secret(r, v->str, v->len))
        return 1;
    for (const sj_node *c = v->child; c; c = c->next)
        if (holds_secret(r, c, depth + 1))
            return 1;
    return 0;
}

/* Every top-level attribute of the resource values of a call (its roots,
 * both sides), to fn, until it fails; sides without needle (when given)
 * are not parsed. */
typedef int (*attribute_fn)(struct redacting *r, const store_value_call *c, const sj_node *m);
static int each_attribute(struct redacting *r, const store_value_call *c, const char *needle,
                          attribute_fn fn)
{
    const struct roots *ro = roots_for(c->rpc);
    const char *sides[2] = {c->request_json, c->response_json};
    int rc = 0;
    for (int i = 0; ro && i < 2 && !rc; i++) {
        sj_doc *doc = NULL;
        if (!sides[i] || (needle && !strstr(sides[i], needle)) ||
            sj_parse(sides[i], strlen(sides[i]), 0, &doc) != 0)
            continue;
        const char *const *names = i == 0 ? ro->request : ro->response;
        for (size_t k = 0; k < (i == 0 ? 3u : 1u) && names[k] && !rc; k++) {
            const sj_node *v = sj_get(sj_root(doc), names[k]);
            for (const sj_node *m = v && v->kind == SJ_OBJECT ? v->child : NULL; m && !rc;
                 m = m->next)
                rc = fn(r, c, m);
        }
        sj_free(doc);
    }
    return rc;
}

/* An attribute the recorder redacted whole: its provider's schema marks it. */
static int schema_attr(struct redacting *r, const store_value_call *c, const sj_node *m)
{
    if (!sj_is_sensitive(m))
        return 0;
    tftap_buf_reset(&r->key);
    tftap_buf_printf(&r->key, "%s%s\n", is_data_rpc(c->rpc) ? "data." : "", c->type_name);
    tftap_buf_append(&r->key, m->key, m->key_len);
    return tftap_buf_failed(&r->key) || set_add(&r->schema_attrs, r->key.data, r->key.len) != 0
               ? TFTAP_ENOMEM
               : 0;
}

/* The first look at the run's calls: the hashes the recorders redacted
 * and the attributes the providers' schemas mark (what the recorders
 * redacted at a resource's top level). */
static int first_look(void *ctx, const store_value_call *c)
{
    struct redacting *r = ctx;
    int rc = collect_hashes(r, c);
    if (rc || !c->type_name || r->a->nconfig == 0)
        return rc;
    return each_attribute(r, c, "\"$sensitive\"", schema_attr);
}

/* The path key of resource's attr (by type: "*TYPE") into config_marks. */
static void config_path(tftap_buf *k, const char *resource, int by_type, const char *attr)
{
    size_t tn;
    const char *t = type_of(resource, &tn);
    tftap_buf_reset(k);
    if (by_type) {
        tftap_buf_putc(k, '*');
        tftap_buf_append(k, t, tn);
    } else {
        tftap_buf_puts(k, resource);
    }
    tftap_buf_putc(k, '\n');
    sj_path_member(k, attr, strlen(attr));
}

/* A configuration mark on: its paths, by resource and by type. */
static int config_mark_on(struct redacting *r, const struct config_mark *m)
{
    for (int by_type = 0; by_type < 2; by_type++) {
        config_path(&r->key, m->resource, by_type, m->attr);
        if (tftap_buf_failed(&r->key) || set_add(&r->config_marks, r->key.data, r->key.len) != 0)
            return TFTAP_ENOMEM;
    }
    return 0;
}

/* The configuration's marks resolved: a reference to an attribute marked
 * (by the configuration, to any depth, or by the provider's schema) marks
 * too. */
static int resolve_config(struct redacting *r)
{
    const analysis_secrets *a = r->a;
    if (a->nconfig == 0)
        return 0;
    r->on = calloc(a->nconfig, 1);
    if (!r->on)
        return TFTAP_ENOMEM;
    int rc = 0;
    for (size_t i = 0; i < a->nconfig && !rc; i++)
        if ((r->on[i] = a->config[i].ref_resource == NULL))
            rc = config_mark_on(r, &a->config[i]);
    for (int more = 1; more && !rc;) {
        more = 0;
        for (size_t i = 0; i < a->nconfig && !rc; i++) {
            const struct config_mark *m = &a->config[i];
            if (r->on[i])
                continue;
            size_t tn;
            const char *t = type_of(m->ref_resource, &tn);
            tftap_buf_reset(&r->key);
            tftap_buf_append(&r->key, t, tn);
            tftap_buf_putc(&r->key, '\n');
            tftap_buf_puts(&r->key, m->ref_attr);
            int on = set_has(&r->schema_attrs, r->key.data, r->key.len);
            config_path(&r->key, m->ref_resource, 0, m->ref_attr);
            on |= set_has(&r->config_marks, r->key.data, r->key.len);
            if (tftap_buf_failed(&r->key))
                rc = TFTAP_ENOMEM;
            else if (on && (rc = config_mark_on(r, m)) == 0)
                r->on[i] = more = 1;
        }
    }
    return rc;
}

/* The strings of an attribute the configuration marks: secrets. */
static int config_value(struct redacting *r, const store_value_call *c, const sj_node *m)
{
    (void)c;
    tftap_buf_reset(&r->key);
    tftap_buf_append(&r->key, r->config_key.data, r->config_key.len);
    sj_path_member(&r->key, m->key, m->key_len);
    if (tftap_buf_failed(&r->key))
        return TFTAP_ENOMEM;
    return set_has(&r->config_marks, r->key.data, r->key.len) ? add_strings_to(&r->found, m, 0) : 0;
}

/* The second look: the strings at the paths the configuration marks, and
 * a provider function's result from a secret argument (core marks it),
 * become secrets of the run, wherever else they appear. */
static int second_look(void *ctx, const store_value_call *c)
{
    struct redacting *r = ctx;
    if (c->rpc && strcmp(c->rpc, "CallFunction") == 0 && c->request_json && c->response_json) {
        sj_doc *req = NULL, *resp = NULL;
        int rc = 0;
        if (sj_parse(c->request_json, strlen(c->request_json), 0, &req) == 0 &&
            holds_secret(r, sj_get(sj_root(req), "arguments"), 0) &&
            sj_parse(c->response_json, strlen(c->response_json), 0, &resp) == 0)
            rc = add_strings_to(&r->found, sj_get(sj_root(resp), "result"), 0);
        sj_free(req);
        sj_free(resp);
        return rc;
    }
    config_key(r, c);
    return r->config_key.len ? each_attribute(r, c, NULL, config_value) : 0;
}

static int rewrite_call(void *ctx, const store_value_call *c, store_value_rewrite *out,
                        int *changed)
{
    struct redacting *r = ctx;
    const struct roots *ro = roots_for(c->rpc);
    r->address =
        c->address && set_has(&r->a->addresses, c->address, strlen(c->address)) ? c->address : NULL;
    config_key(r, c);
    size_t nreq = 0, nresp = 0;
    while (ro && nreq < 3 && ro->request[nreq])
        nreq++;
    while (ro && nresp < 1 && ro->response[nresp])
        nresp++;
    int rc = redact_side(r, c->request_json, ro ? ro->request : NULL, nreq, &out->req, changed,
                         STORE_REWRITE_REQUEST);
    if (!rc)
        rc = redact_side(r, c->response_json, ro ? ro->response : NULL, nresp, &out->resp, changed,
                         STORE_REWRITE_RESPONSE);
    if (!rc && c->status_message && c->status_message[0]) {
        int64_t cut = cut_secrets(r, c->status_message, strlen(c->status_message), &out->status);
        r->counts[SJ_REDACT_EQUAL] += cut;
        *changed |= cut > 0 ? STORE_REWRITE_STATUS : 0;
        rc = tftap_buf_failed(&out->status) ? TFTAP_ENOMEM : 0;
    }
    /* A decode error may quote the bytes of the value it could not read. */
    if (!rc && c->decode_error && c->decode_error[0]) {
        int64_t cut = cut_secrets(r, c->decode_error, strlen(c->decode_error), &out->decode_error);
        r->counts[SJ_REDACT_EQUAL] += cut;
        *changed |= cut > 0 ? STORE_REWRITE_DECODE_ERROR : 0;
        rc = tftap_buf_failed(&out->decode_error) ? TFTAP_ENOMEM : 0;
    }
    r->calls += *changed != 0;
    return rc;
}

/* The command's arguments with every secret in them replaced
 * (`-var token=...`): a secret of a few characters only where it is a
 * whole argument or a whole -var value, longer ones wherever they are. */
static int redact_args(const analysis_secrets *a, const char *args_json, tftap_buf *out,
                       int64_t *count)
{
    sj_doc *doc = NULL;
    if (!args_json || sj_parse(args_json, strlen(args_json), 8, &doc) != 0)
        return 0;
    const sj_node *root = sj_root(doc);
    int64_t before = *count;
    tftap_buf arg = TFTAP_BUF_INIT;
    tftap_buf_putc(out, '[');
    for (const sj_node *e = root->kind == SJ_ARRAY ? root->child : NULL; e; e = e->next) {
        if (e != root->child)
            tftap_buf_putc(out, ',');
        if (e->kind != SJ_STRING) {
            sj_write(e, out);
            continue;
        }
        tftap_buf_reset(&arg);
        tftap_buf_append(&arg, e->str, e->len);
        for (size_t i = 0; i < a->values.cap; i++) {
            const struct entry *s = &a->values.e[i];
            if (!s->s)
                continue;
            const char *eq = memchr(arg.data ? arg.data : "", '=', arg.len);
            int whole = (arg.len == s->n && memcmp(arg.data, s->s, s->n) == 0) ||
                        (eq && (size_t)(arg.data + arg.len - (eq + 1)) == s->n &&
                         memcmp(eq + 1, s->s, s->n) == 0);
            if (s->n >= 4 || whole)
                *count += cut_out(&arg, s->s, s->n, 0);
        }
        if (tftap_buf_failed(&arg))
            out->failed = 1;
        tftap_buf_json_string(out, arg.data ? arg.data : "", arg.len);
    }
    tftap_buf_putc(out, ']');
    tftap_buf_done(&arg);
    sj_free(doc);
    return *count > before;
}

struct run_args {
    tftap_buf json;
};

static int take_args(void *ctx, const store_run_row *row)
{
    struct run_args *ra = ctx;
    tftap_buf_puts(&ra->json, row->args_json ? row->args_json : "[]");
    return 0;
}

/* The hashes of the set's strings (their JSON text, as values hash) into
 * hex + 65 * *nh and hmacs. */
static int hash_strings(store *s, const struct strset *set, const char **hmacs, char *hex,
                        size_t *nh)
{
    tftap_buf t = TFTAP_BUF_INIT;
    int rc = 0;
    for (size_t i = 0; i < set->cap && !rc; i++) {
        if (!set->e[i].s)
            continue;
        tftap_buf_reset(&t);
        tftap_buf_json_string(&t, set->e[i].s, set->e[i].n);
        if (tftap_buf_failed(&t))
            rc = TFTAP_ENOMEM;
        else if (store_value_hmac(s, t.data, t.len, hex + 65 * *nh) == 0)
            hmacs[*nh] = hex + 65 * *nh, (*nh)++;
    }
    tftap_buf_done(&t);
    return rc;
}

int analysis_redact_run(store *s, int64_t run_id, const analysis_secrets *a,
                        analysis_redaction *out)
{
    memset(out, 0, sizeof *out);
    if (!a)
        return 0;
    int kept = 0;
    int rc = store_run_values_kept(s, run_id, &kept);
    if (rc)
        return rc;
    /* 2: held back in a spool, its values as recorded: redacted alike. */
    kept = kept == 1;
    out->values_kept = kept;
    struct redacting r = {.s = s,
                          .a = a,
                          .key = TFTAP_BUF_INIT,
                          .text = TFTAP_BUF_INIT,
                          .message = TFTAP_BUF_INIT,
                          .config_key = TFTAP_BUF_INIT};
    struct run_args ra = {TFTAP_BUF_INIT};
    tftap_buf args = TFTAP_BUF_INIT, counts = TFTAP_BUF_INIT;
    const char **hmacs = NULL;
    char *hex = NULL;
    /* A run that kept its values has no hashes to look for. */
    /* What an earlier redaction of the run knew (a wrapped run is
     * redacted by each of its recorders), and what the recorders hid. */
    if (!kept)
        rc = store_run_secrets_each(s, run_id, add_hash, &r);
    if (!kept && !rc)
        rc = store_run_values_each(s, run_id, first_look, &r);
    if (rc || a->values.n + a->marks.n + a->nconfig + r.hashes.n == 0)
        goto done;
    r.h = store_value_hmac_new(s);
    rc = resolve_config(&r);
    if (!rc && !kept)
        rc = store_run_values_each(s, run_id, second_look, &r);
    if (rc)
        goto done;
    /* The hashes of the secrets, for what is made of the run later (a
     * bundle of a run whose values were kept). */
    size_t nsecrets = a->values.n + r.found.n, nh = 0;
    hmacs = calloc(nsecrets ? nsecrets : 1, sizeof *hmacs);
    hex = calloc(nsecrets ? nsecrets : 1, 65);
    if (!hmacs || !hex) {
        rc = TFTAP_ENOMEM;
        goto done;
    }
    rc = hash_strings(s, &a->values, hmacs, hex, &nh);
    if (!rc)
        rc = hash_strings(s, &r.found, hmacs, hex, &nh);
    int new_args = 0;
    if (!rc && !kept) {
        rc = store_run_get(s, run_id, take_args, &ra);
        if (!rc)
            new_args = redact_args(a, tftap_buf_cstr(&ra.json), &args, &out->arguments);
        if (tftap_buf_failed(&args) || tftap_buf_failed(&ra.json))
            rc = TFTAP_ENOMEM;
    }
    if (rc)
        goto done;
    store_run_redaction how = {.rewrite = kept ? NULL : rewrite_call,
                               .ctx = &r,
                               .args_json = new_args ? tftap_buf_cstr(&args) : NULL,
                               .hmacs = hmacs,
                               .nhmacs = nh};
    rc = store_run_redact(s, run_id, &how);
    out->core_mark = r.counts[SJ_REDACT_MARKED];
    out->known_secret = r.counts[SJ_REDACT_EQUAL];
    out->calls = r.calls;
    /* The counts are known once the calls are rewritten. */
    if (!rc) {
        tftap_buf_printf(&counts,
                         "{\"core_mark\":%lld,\"known_secret\":%lld,\"arguments\":%lld,"
                         "\"secrets\":%zu}",
                         (long long)out->core_mark, (long long)out->known_secret,
                         (long long)out->arguments, nsecrets);
        store_run_redaction c = {.counts_json = tftap_buf_cstr(&counts)};
        rc = tftap_buf_failed(&counts) ? TFTAP_ENOMEM : store_run_redact(s, run_id, &c);
    }
done:
    tftap_buf_done(&r.key);
    tftap_buf_done(&r.text);
    tftap_buf_done(&r.message);
    tftap_buf_done(&r.config_key);
    set_free(&r.hashes);
    set_free(&r.schema_attrs);
    set_free(&r.config_marks);
    set_free(&r.found);
    free(r.on);
    tftap_hmac_free(r.h);
    tftap_buf_done(&ra.json);
    tftap_buf_done(&args);
    tftap_buf_done(&counts);
    free(hmacs);
    free(hex);
    return rc;
}
