/* launch: tftap run's last word on secrets. The values core hides are known
 * from the plan and the state documents the address matching read, and,
 * where no document holds them yet (a plan not saved creates nothing in
 * the state), from the configuration: a variable declared sensitive, with
 * the value the command gives it (-var, a -var-file, terraform.tfvars,
 * *.auto.tfvars, TF_VAR_name, its default), and the attributes whose
 * expression core marks (sensitive(), a sensitive variable, local, module
 * output or attribute read). The run's record is redacted by them
 * (analysis_redact_run) and the file scrubbed of what it held. */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "launch/hcl_int.h"
#include "launch/launch_int.h"
#include "store/store.h"

/* The names of the sensitive variables, one string each. */
struct names {
    char **v;
    size_t n, cap;
};

static int names_add(struct names *ns, const char *s)
{
    if (ns->n == ns->cap) {
        size_t cap = ns->cap ? ns->cap * 2 : 8;
        char **v = realloc(ns->v, cap * sizeof *v);
        if (!v)
            return -1;
        ns->v = v;
        ns->cap = cap;
    }
    if ((ns->v[ns->n] = strdup(s)) == NULL)
        return -1;
    ns->n++;
    return 0;
}

static int names_has(const struct names *ns, const char *s, size_t n)
{
    for (size_t i = 0; i < ns->n; i++)
        if (strlen(ns->v[i]) == n && memcmp(ns->v[i], s, n) == 0)
            return 1;
    return 0;
}

static void names_done(struct names *ns)
{
    for (size_t i = 0; i < ns->n; i++)
        free(ns->v[i]);
    free(ns->v);
}

/* Every string token from t->v[from] to the end of the value that starts
 * there (a string, or a {...} / [...] of them). */
static void value_strings(analysis_secrets *a, const struct toks *t, size_t from)
{
    int depth = 0;
    for (size_t i = from; i < t->n; i++) {
        const struct tok *k = &t->v[i];
        if (k->kind == TOK_LBRACE || k->kind == TOK_LBRACKET)
            depth++;
        else if (k->kind == TOK_RBRACE || k->kind == TOK_RBRACKET)
            depth--;
        else if (k->kind == TOK_STRING)
            analysis_secrets_add_variable(a, k->text, strlen(k->text));
        if (depth <= 0)
            return;
    }
}

/* Tokens of a file (NULL when it cannot be read or tokenized). */
static int file_toks(const char *path, struct toks *t)
{
    tftap_buf text = TFTAP_BUF_INIT;
    int rc = tftap_read_file(path, CAPTURE_MAX, &text);
    if (rc == 0)
        rc = hcl_tokenize(text.data ? text.data : "", text.len, t);
    tftap_buf_done(&text);
    return rc;
}

static void json_strings(analysis_secrets *a, const sj_node *v, unsigned depth)
{
    if (!v || depth > 64)
        return;
    if (v->kind == SJ_STRING)
        analysis_secrets_add_variable(a, v->str, v->len);
    for (const sj_node *c = v->child; c; c = c->next)
        json_strings(a, c, depth + 1);
}

/* A .tfvars.json file: {"NAME": VALUE, ...}. */
static void tfvars_json(const char *path, const struct names *ns, analysis_secrets *a)
{
    tftap_buf text = TFTAP_BUF_INIT;
    sj_doc *d = NULL;
    if (tftap_read_file(path, CAPTURE_MAX, &text) == 0 &&
        sj_parse(text.data ? text.data : "", text.len, 0, &d) == 0 && sj_root(d)->kind == SJ_OBJECT)
        for (const sj_node *m = sj_root(d)->child; m; m = m->next)
            if (names_has(ns, m->key, m->key_len))
                json_strings(a, m, 0);
    sj_free(d);
    tftap_buf_done(&text);
}

/* A .tfvars file's top-level `NAME = VALUE` for the sensitive names. */
static void tfvars(const char *path, const struct names *ns, analysis_secrets *a)
{
    if (tftap_ends_with(path, ".json")) {
        tfvars_json(path, ns, a);
        return;
    }
    struct toks t = {0};
    if (file_toks(path, &t) == 0) {
        int depth = 0;
        for (size_t i = 0; i + 2 < t.n; i++) {
            const struct tok *k = &t.v[i];
            if (k->kind == TOK_LBRACE || k->kind == TOK_LBRACKET)
                depth++;
            else if (k->kind == TOK_RBRACE || k->kind == TOK_RBRACKET)
                depth--;
            else if (depth == 0 && k->kind == TOK_IDENT && t.v[i + 1].kind == TOK_EQ &&
                     names_has(ns, k->text, strlen(k->text)))
                value_strings(a, &t, i + 2);
        }
    }
    hcl_toks_done(&t);
}

/* A value given as text (-var NAME=VALUE, TF_VAR_NAME): the text itself,
 * and the strings inside it when it is HCL ({...}, [...]). */
static void text_value(analysis_secrets *a, const char *v)
{
    analysis_secrets_add_variable(a, v, strlen(v));
    if (v[0] != '{' && v[0] != '[')
        return;
    struct toks t = {0};
    if (hcl_tokenize(v, strlen(v), &t) == 0)
        value_strings(a, &t, 0);
    hcl_toks_done(&t);
}

static void name_value(analysis_secrets *a, const struct names *ns, const char *nv)
{
    const char *eq = strchr(nv, '=');
    if (eq && names_has(ns, nv, (size_t)(eq - nv)))
        text_value(a, eq + 1);
}

/* ---- what the configuration marks: attributes of the root module's
 * resources whose expression calls sensitive(), or refers to a sensitive
 * variable, local or local child module output, or to another resource's
 * attribute (marked when that one is: analysis resolves it against the
 * configuration's marks and the provider's schema). A plan not saved
 * marks nothing of a new instance, and a function of a secret
 * (sha256(var.x), base64encode()) is not the secret: only where it is
 * used tells. ---- */

/* A module's file, its text kept: newlines end an attribute. */
struct tf_file {
    tftap_buf text;
    struct toks t;
};

/* The .tf files of a module's directory. */
struct tf_files {
    struct tf_file *v;
    size_t n, cap;
};

static void load_dir(const char *dir, struct tf_files *out)
{
    tftap_buf path = TFTAP_BUF_INIT;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' || !tftap_ends_with(de->d_name, ".tf"))
            continue;
        tftap_buf_reset(&path);
        tftap_buf_printf(&path, "%s/%s", dir, de->d_name);
        if (out->n == out->cap) {
            size_t c = out->cap ? out->cap * 2 : 8;
            struct tf_file *v = realloc(out->v, c * sizeof *v);
            if (!v)
                break;
            out->v = v;
            out->cap = c;
        }
        struct tf_file *f = &out->v[out->n];
        *f = (struct tf_file){TFTAP_BUF_INIT, {0}};
        if (!tftap_buf_failed(&path) &&
            tftap_read_file(tftap_buf_cstr(&path), CAPTURE_MAX, &f->text) == 0 &&
            hcl_tokenize(f->text.data ? f->text.data : "", f->text.len, &f->t) == 0) {
            tftap_buf_cstr(&f->text); /* tokens index it: never NULL */
            out->n++;
        } else {
            tftap_buf_done(&f->text);
            hcl_toks_done(&f->t);
        }
    }
    if (d)
        closedir(d);
    tftap_buf_done(&path);
}

static void files_done(struct tf_files *fs)
{
    for (size_t i = 0; i < fs->n; i++) {
        tftap_buf_done(&fs->v[i].text);
        hcl_toks_done(&fs->v[i].t);
    }
    free(fs->v);
    *fs = (struct tf_files){0};
}

static int tok_is(const struct tf_file *f, size_t i, char c)
{
    return i < f->t.n && f->t.v[i].kind == TOK_OTHER && f->t.v[i].start < f->text.len &&
           f->text.data[f->t.v[i].start] == c;
}

/* Does a newline lie between tokens i - 1 and i? */
static int newline_before(const struct tf_file *f, size_t i)
{
    if (i == 0 || i >= f->t.n)
        return 0;
    for (size_t b = f->t.v[i - 1].end; b < f->t.v[i].start && b < f->text.len; b++)
        if (f->text.data[b] == '\n')
            return 1;
    return 0;
}

/* The end (one past) of the expression starting at token from, which ends
 * at a newline outside brackets, or at the end of its block (end). */
static size_t expr_end(const struct tf_file *f, size_t from, size_t end)
{
    int nest = 0;
    for (size_t j = from; j < end; j++) {
        const struct tok *k = &f->t.v[j];
        if (j > from && nest == 0 && newline_before(f, j))
            return j;
        if (k->kind == TOK_LBRACE || k->kind == TOK_LBRACKET || tok_is(f, j, '('))
            nest++;
        else if (k->kind == TOK_RBRACE || k->kind == TOK_RBRACKET || tok_is(f, j, ')'))
            if (--nest < 0)
                return j;
    }
    return end;
}

/* The token closing the brace at open (t->n when unbalanced). */
static size_t brace_close(const struct toks *t, size_t open)
{
    int d = 0;
    for (size_t j = open; j < t->n; j++) {
        if (t->v[j].kind == TOK_LBRACE)
            d++;
        else if (t->v[j].kind == TOK_RBRACE && --d == 0)
            return j;
    }
    return t->n;
}

/* What an expression refers to: marked as it is, and the other
 * resources' attributes it reads. */
struct sources {
    int marked, unmarked; /* sensitive(); nonsensitive() */
    struct names refs;    /* "RESOURCE\nATTR" */
};

static int is_word(const char *s, size_t n, const char *w)
{
    return strlen(w) == n && memcmp(s, w, n) == 0;
}

/* The segment of a dotted name from s: its length. */
static size_t segment(const char *s)
{
    return strcspn(s, ".");
}

/* What reading the configuration knows, and the block it is in. */
struct marking {
    analysis_secrets *a;
    const char *workdir;
    const struct tf_file *f;
    struct names *vars;       /* the sensitive variables' names */
    struct names *locals;     /* the sensitive locals' */
    struct names *local_refs; /* "LOCAL\nRESOURCE\nATTR": what a local reads of a resource */
    struct names *outputs;    /* the sensitive outputs of local child modules: "MODULE.OUTPUT" */
    const char *resource;     /* the block's: "TYPE.NAME", "data.TYPE.NAME", a label */
    int changed;
    int sensitive;      /* the variable or output block says sensitive = true */
    size_t default_tok; /* a variable's default's first token; 0: none */
    char *source;       /* a module block's source, when a local path */
};

static void sources_of(const struct toks *t, size_t from, size_t end, const char *text,
                       const struct marking *m, struct sources *out, unsigned depth);

/* The ${...} of a quoted template, their references. */
static void template_sources(const char *s, const struct marking *m, struct sources *out,
                             unsigned depth)
{
    for (const char *p = strstr(s, "${"); p && depth < 8; p = strstr(p, "${")) {
        const char *q = p + 2;
        int d = 1;
        while (*q && d > 0) {
            d += *q == '{' ? 1 : *q == '}' ? -1 : 0;
            q++;
        }
        struct toks t = {0};
        if (hcl_tokenize(p + 2, (size_t)(q - p - 2), &t) == 0)
            sources_of(&t, 0, t.n, p + 2, m, out, depth + 1);
        hcl_toks_done(&t);
        p = q;
    }
}

static void sources_of(const struct toks *t, size_t from, size_t end, const char *text,
                       const struct marking *m, struct sources *out, unsigned depth)
{
    static const char *const not_resources[] = {"var",  "local", "module",    "each", "count",
                                                "path", "self",  "terraform", "data", "provider"};
    for (size_t i = from; i < end; i++) {
        const struct tok *k = &t->v[i];
        if (k->kind == TOK_STRING) {
            template_sources(k->text, m, out, depth);
            continue;
        }
        if (k->kind != TOK_IDENT)
            continue;
        const char *s = k->text;
        int call = i + 1 < end && t->v[i + 1].kind == TOK_OTHER && text[t->v[i + 1].start] == '(';
        if (call && strcmp(s, "sensitive") == 0) {
            out->marked = 1;
            /* sensitive("literal"): the literal is a secret wherever it goes. */
            if (i + 3 < end && t->v[i + 2].kind == TOK_STRING && !strstr(t->v[i + 2].text, "${") &&
                t->v[i + 3].kind == TOK_OTHER && text[t->v[i + 3].start] == ')')
                analysis_secrets_add_variable(m->a, t->v[i + 2].text, strlen(t->v[i + 2].text));
            continue;
        }
        if (call && strcmp(s, "nonsensitive") == 0) {
            out->unmarked = 1;
            continue;
        }
        size_t n0 = segment(s);
        if (is_word(s, n0, "var") && s[n0] == '.') {
            size_t n1 = segment(s + n0 + 1);
            out->marked |= names_has(m->vars, s + n0 + 1, n1);
            continue;
        }
        if (is_word(s, n0, "local") && s[n0] == '.') {
            size_t n1 = segment(s + n0 + 1);
            out->marked |= names_has(m->locals, s + n0 + 1, n1);
            /* What the local reads of resources, this reads too. */
            for (size_t r = 0; m->local_refs && r < m->local_refs->n; r++) {
                const char *e = m->local_refs->v[r];
                if (strncmp(e, s + n0 + 1, n1) == 0 && e[n1] == '\n' &&
                    !names_has(&out->refs, e + n1 + 1, strlen(e + n1 + 1)))
                    (void)names_add(&out->refs, e + n1 + 1);
            }
            continue;
        }
        if (is_word(s, n0, "module") && s[n0] == '.') { /* module.NAME.OUTPUT */
            size_t n1 = segment(s + n0 + 1);
            if (s[n0 + 1 + n1] == '.')
                out->marked |=
                    names_has(m->outputs, s + n0 + 1, n1 + 1 + segment(s + n0 + 1 + n1 + 1));
            continue;
        }
        /* TYPE.NAME.ATTR, data.TYPE.NAME.ATTR, TYPE.NAME[KEY].ATTR,
         * TYPE.NAME[*].ATTR, TYPE.NAME.*.ATTR. */
        const char *r = s;
        if (is_word(s, n0, "data") && s[n0] == '.')
            r = s + n0 + 1;
        size_t nt = segment(r);
        int skip = r == s && (nt == 0 || r[nt] != '.');
        for (size_t w = 0; !skip && r == s && w < sizeof not_resources / sizeof *not_resources; w++)
            skip = is_word(s, n0, not_resources[w]);
        if (skip || r[nt] != '.' || !strchr(s, '_'))
            continue; /* a resource type has its provider's prefix and an underscore */
        size_t nn = segment(r + nt + 1);
        const char *attr = r[nt + 1 + nn] == '.' && r[nt + 2 + nn] ? r + nt + 2 + nn : NULL;
        size_t j = i + 1;
        while (attr == NULL && j < end) { /* [KEY], [*], .*: then .ATTR */
            if (t->v[j].kind == TOK_LBRACKET) {
                while (j < end && t->v[j].kind != TOK_RBRACKET)
                    j++;
                j++;
            } else if (t->v[j].kind == TOK_OTHER && text[t->v[j].start] == '*') {
                j++;
            } else if (t->v[j].kind == TOK_IDENT && t->v[j].text[0] == '.' &&
                       t->v[j].start == t->v[j - 1].end) {
                attr = t->v[j].text + 1;
                if (*attr == '\0' && j + 1 < end && t->v[j + 1].kind == TOK_OTHER)
                    attr = NULL, j++; /* ".*" then ".ATTR" */
                else
                    break;
            } else {
                break;
            }
        }
        if (!attr || !*attr || *attr == '.')
            continue;
        tftap_buf ref = TFTAP_BUF_INIT;
        tftap_buf_append(&ref, s, (size_t)(r - s) + nt + 1 + nn);
        tftap_buf_putc(&ref, '\n');
        tftap_buf_append(&ref, attr, segment(attr));
        if (!tftap_buf_failed(&ref) && !names_has(&out->refs, ref.data, ref.len))
            (void)names_add(&out->refs, tftap_buf_cstr(&ref));
        tftap_buf_done(&ref);
    }
}

/* The marks of one attribute (or nested block, marked whole) of resource. */
static void mark_attr(analysis_secrets *a, const char *resource, const char *attr,
                      const struct sources *src)
{
    if (src->unmarked && !src->marked)
        return; /* nonsensitive(): what core shows, shown */
    if (src->marked) {
        (void)analysis_secrets_add_config(a, resource, attr, NULL, NULL);
        return;
    }
    for (size_t i = 0; i < src->refs.n; i++) {
        char *nl = strchr(src->refs.v[i], '\n');
        *nl = '\0';
        (void)analysis_secrets_add_config(a, resource, attr, src->refs.v[i], nl + 1);
        *nl = '\n';
    }
}

/* Which of a body's statements are attributes or nested blocks: calls
 * fn for each with its name and its tokens [from, end). */
typedef void (*statement_fn)(void *ctx, const char *name, size_t from, size_t end);
static void statements(const struct tf_file *f, size_t open, size_t close, statement_fn fn,
                       void *ctx)
{
    const struct toks *t = &f->t;
    for (size_t i = open + 1; i < close;) {
        const struct tok *k = &t->v[i];
        if (k->kind != TOK_IDENT) {
            i++;
            continue;
        }
        if (i + 1 < close && t->v[i + 1].kind == TOK_EQ) {
            size_t end = expr_end(f, i + 2, close);
            fn(ctx, k->text, i + 2, end);
            i = end > i + 2 ? end : i + 2;
            continue;
        }
        size_t j = i + 1; /* a nested block: NAME ["LABEL"...] { ... } */
        while (j < close && t->v[j].kind == TOK_STRING)
            j++;
        if (j < close && t->v[j].kind == TOK_LBRACE) {
            size_t c = brace_close(t, j);
            /* dynamic "NAME" {...} makes NAME blocks. */
            const char *name =
                strcmp(k->text, "dynamic") == 0 && j > i + 1 ? t->v[i + 1].text : k->text;
            fn(ctx, name, j, c < close ? c + 1 : close);
            i = c < close ? c + 1 : close;
            continue;
        }
        i++;
    }
}

/* Is the statement `sensitive = true`? */
static int says_sensitive(const struct marking *m, const char *name, size_t from, size_t end)
{
    const struct toks *t = &m->f->t;
    return strcmp(name, "sensitive") == 0 && from + 1 == end && t->v[from].kind == TOK_IDENT &&
           strcmp(t->v[from].text, "true") == 0;
}

/* A root module `variable "NAME" { sensitive = true ... }`: its name, and
 * its default's strings as secrets. */
static void variable_statement(void *ctx, const char *name, size_t from, size_t end)
{
    struct marking *m = ctx;
    if (says_sensitive(m, name, from, end))
        m->sensitive = 1;
    else if (strcmp(name, "default") == 0 && from < end)
        m->default_tok = from;
}

static void variable_done(struct marking *m)
{
    if (m->sensitive && names_add(m->vars, m->resource) == 0 && m->default_tok)
        value_strings(m->a, &m->f->t, m->default_tok);
    m->sensitive = 0;
    m->default_tok = 0;
}

static void resource_statement(void *ctx, const char *name, size_t from, size_t end)
{
    static const char *const meta[] = {"count",     "for_each",    "depends_on", "provider",
                                       "lifecycle", "provisioner", "connection"};
    struct marking *m = ctx;
    for (size_t i = 0; i < sizeof meta / sizeof *meta; i++)
        if (strcmp(name, meta[i]) == 0)
            return;
    struct sources src = {0};
    sources_of(&m->f->t, from, end, m->f->text.data, m, &src, 0);
    mark_attr(m->a, m->resource, name, &src);
    names_done(&src.refs);
}

/* A local: sensitive (by what it reads), and the resources' attributes it
 * reads, for what reads it. */
static void local_statement(void *ctx, const char *name, size_t from, size_t end)
{
    struct marking *m = ctx;
    if (names_has(m->locals, name, strlen(name)))
        return;
    struct sources src = {0};
    sources_of(&m->f->t, from, end, m->f->text.data, m, &src, 0);
    if (src.marked && !src.unmarked && names_add(m->locals, name) == 0)
        m->changed = 1;
    tftap_buf e = TFTAP_BUF_INIT;
    for (size_t i = 0; !src.unmarked && i < src.refs.n; i++) {
        tftap_buf_reset(&e);
        tftap_buf_printf(&e, "%s\n%s", name, src.refs.v[i]);
        if (!tftap_buf_failed(&e) && !names_has(m->local_refs, e.data, e.len) &&
            names_add(m->local_refs, tftap_buf_cstr(&e)) == 0)
            m->changed = 1;
    }
    tftap_buf_done(&e);
    names_done(&src.refs);
}

/* Every top-level block KEYWORD ["LABEL" "LABEL"] { ... } of the files:
 * fn for each of its statements, then done (when not NULL). */
static void blocks(const struct tf_file *files, size_t nfiles, const char *keyword, int labels,
                   statement_fn fn, void (*done)(struct marking *m), struct marking *m)
{
    tftap_buf resource = TFTAP_BUF_INIT;
    for (size_t fi = 0; fi < nfiles; fi++) {
        const struct toks *t = &files[fi].t;
        int depth = 0;
        for (size_t i = 0; i < t->n; i++) {
            const struct tok *k = &t->v[i];
            if (k->kind == TOK_LBRACE || k->kind == TOK_RBRACE) {
                depth += k->kind == TOK_LBRACE ? 1 : -1;
                continue;
            }
            if (depth != 0 || k->kind != TOK_IDENT || strcmp(k->text, keyword) != 0 ||
                i + (size_t)labels + 1 >= t->n || t->v[i + labels + 1].kind != TOK_LBRACE)
                continue;
            int ok = 1;
            for (int l = 1; l <= labels; l++)
                ok &= t->v[i + l].kind == TOK_STRING;
            if (!ok)
                continue;
            tftap_buf_reset(&resource);
            if (labels == 2)
                tftap_buf_printf(&resource, "%s%s.%s", strcmp(keyword, "data") == 0 ? "data." : "",
                                 t->v[i + 1].text, t->v[i + 2].text);
            else if (labels == 1)
                tftap_buf_puts(&resource, t->v[i + 1].text);
            m->f = &files[fi];
            m->resource = tftap_buf_cstr(&resource);
            size_t open = i + labels + 1, close = brace_close(t, open);
            statements(&files[fi], open, close < t->n ? close : t->n, fn, m);
            if (done)
                done(m);
            i = close; /* the loop's ++ passes the brace */
        }
    }
    tftap_buf_done(&resource);
}

/* An `output "NAME" { sensitive = true }` of a child module. */
static void output_statement(void *ctx, const char *name, size_t from, size_t end)
{
    struct marking *m = ctx;
    m->sensitive |= says_sensitive(m, name, from, end);
}

static void output_done(struct marking *m)
{
    if (m->sensitive)
        (void)names_add(m->outputs, m->resource);
    m->sensitive = 0;
}

/* A root `module "NAME" { source = "./DIR" }`: its source, when a local path. */
static void module_statement(void *ctx, const char *name, size_t from, size_t end)
{
    struct marking *m = ctx;
    const struct toks *t = &m->f->t;
    if (strcmp(name, "source") == 0 && from + 1 == end && t->v[from].kind == TOK_STRING &&
        (strncmp(t->v[from].text, "./", 2) == 0 || strncmp(t->v[from].text, "../", 3) == 0)) {
        free(m->source);
        m->source = strdup(t->v[from].text);
    }
}

/* A local child module: its sensitive outputs, as "MODULE.OUTPUT". */
static void module_done(struct marking *m)
{
    if (!m->source)
        return;
    struct tf_files child = {0};
    tftap_buf dir = TFTAP_BUF_INIT;
    tftap_buf_printf(&dir, "%s/%s", m->workdir, m->source);
    if (!tftap_buf_failed(&dir))
        load_dir(tftap_buf_cstr(&dir), &child);
    struct names outs = {0};
    struct marking c = {.a = m->a, .vars = m->vars, .locals = m->locals, .outputs = &outs};
    blocks(child.v, child.n, "output", 1, output_statement, output_done, &c);
    for (size_t i = 0; i < outs.n; i++) {
        tftap_buf_reset(&dir);
        tftap_buf_printf(&dir, "%s.%s", m->resource, outs.v[i]);
        if (!tftap_buf_failed(&dir))
            (void)names_add(m->outputs, tftap_buf_cstr(&dir));
    }
    names_done(&outs);
    files_done(&child);
    tftap_buf_done(&dir);
    free(m->source);
    m->source = NULL;
}

/* The sensitive variables (their names into vars, their defaults as
 * secrets), the sensitive outputs of local child modules, then what the
 * configuration marks. */
static void config_marks(analysis_secrets *a, const char *workdir, const struct tf_file *files,
                         size_t nfiles, struct names *vars)
{
    struct names locals = {0}, local_refs = {0}, outputs = {0};
    struct marking m = {.a = a,
                        .workdir = workdir,
                        .vars = vars,
                        .locals = &locals,
                        .local_refs = &local_refs,
                        .outputs = &outputs};
    blocks(files, nfiles, "variable", 1, variable_statement, variable_done, &m);
    blocks(files, nfiles, "module", 1, module_statement, module_done, &m);
    /* A local of a sensitive one is sensitive: until none is added. */
    for (int round = 0; round < 64; round++) {
        m.changed = 0;
        blocks(files, nfiles, "locals", 0, local_statement, NULL, &m);
        if (!m.changed)
            break;
    }
    blocks(files, nfiles, "resource", 2, resource_statement, NULL, &m);
    blocks(files, nfiles, "data", 2, resource_statement, NULL, &m);
    names_done(&locals);
    names_done(&local_refs);
    names_done(&outputs);
}

/* What the configuration says is secret, with the values this command
 * gives it. */
static void from_config(analysis_secrets *a, const char *workdir, char *const *args,
                        char *const *env)
{
    struct names ns = {0};
    tftap_buf path = TFTAP_BUF_INIT;
    struct tf_files root = {0};
    DIR *d;
    struct dirent *de;
    load_dir(workdir, &root);
    config_marks(a, workdir, root.v, root.n, &ns);
    files_done(&root);
    if (ns.n > 0) {
        /* The variable files the CLI reads by itself, then the command's. */
        d = opendir(workdir);
        while (d && (de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, "terraform.tfvars") != 0 &&
                strcmp(de->d_name, "terraform.tfvars.json") != 0 &&
                !tftap_ends_with(de->d_name, ".auto.tfvars") &&
                !tftap_ends_with(de->d_name, ".auto.tfvars.json"))
                continue;
            tftap_buf_reset(&path);
            tftap_buf_printf(&path, "%s/%s", workdir, de->d_name);
            if (!tftap_buf_failed(&path))
                tfvars(tftap_buf_cstr(&path), &ns, a);
        }
        if (d)
            closedir(d);
        for (size_t i = 0; args && args[i]; i++) {
            const char *x = args[i][0] == '-' && args[i][1] == '-' ? args[i] + 1 : args[i];
            const char *file = NULL;
            if (strcmp(x, "-var") == 0 && args[i + 1])
                name_value(a, &ns, args[++i]);
            else if (strncmp(x, "-var=", 5) == 0)
                name_value(a, &ns, x + 5);
            else if (strcmp(x, "-var-file") == 0 && args[i + 1])
                file = args[++i];
            else if (strncmp(x, "-var-file=", 10) == 0)
                file = x + 10;
            if (file) {
                tftap_buf_reset(&path);
                if (file[0] == '/')
                    tftap_buf_puts(&path, file);
                else
                    tftap_buf_printf(&path, "%s/%s", workdir, file);
                if (!tftap_buf_failed(&path))
                    tfvars(tftap_buf_cstr(&path), &ns, a);
            }
        }
        for (size_t i = 0; env && env[i]; i++)
            if (strncmp(env[i], "TF_VAR_", 7) == 0)
                name_value(a, &ns, env[i] + 7);
    }
    tftap_buf_done(&path);
    names_done(&ns);
}

int run_redact_secrets(store *s, int64_t run_id, const char *workdir, char *const *args,
                       char *const *env, const struct analysis_match_doc *docs, size_t ndocs,
                       int rewrite)
{
    analysis_secrets *a = analysis_secrets_new();
    if (!a) {
        launch_error("out of memory looking for the run's sensitive values: run %lld may hold "
                     "values the configuration marks sensitive in clear",
                     (long long)run_id);
        return 0;
    }
    for (size_t i = 0; i < ndocs; i++)
        (void)analysis_secrets_add_doc(a, docs[i].json, docs[i].len); /* not JSON: nothing */
    if (workdir)
        from_config(a, workdir, args, env);
    analysis_redaction r;
    int rc = analysis_redact_run(s, run_id, a, &r);
    if (rc != 0)
        launch_error("could not redact the values core marks sensitive in run %lld (%s): the "
                     "record holds them in clear; remove it with care",
                     (long long)run_id, rc == TFTAP_ESTORE ? store_errmsg(s) : tftap_strerror(rc));
    /* A run held back in a spool may be copied into its record once the
     * last of its writers has redacted it: before, another recorder still
     * writes values in clear. */
    else if (rewrite && store_run_hold_back(s, run_id, 0) != 0)
        launch_error("run %lld is redacted but could not be marked so (%s): it stays held back "
                     "and is not copied into a record",
                     (long long)run_id, store_errmsg(s));
    if (rc == 0 && rewrite && (r.calls > 0 || r.arguments > 0)) {
        int scrubbed = store_scrub(s);
        if (scrubbed == 1)
            launch_error(
                "a reader of the database kept its write-ahead log from being emptied: "
                "the log holds run %lld's sensitive values until the last connection to it "
                "closes",
                (long long)run_id);
        else if (scrubbed == 2)
            launch_error(
                "run %lld's sensitive values are redacted, but the database file was not "
                "rewritten (over %lld MiB, or busy): copies may remain in its unused space "
                "until it is (sqlite3 FILE VACUUM, or tftap prune)",
                (long long)run_id, (long long)(STORE_SCRUB_VACUUM_MAX >> 20));
    }
    analysis_secrets_free(a);
    return rc == 0 && r.calls > 0;
}
