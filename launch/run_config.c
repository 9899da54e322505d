/* tftap run: the configuration's resource blocks, for the address matching
 * of a plan not saved to a file (analysis_match_doc, "tftap_config"). A
 * resource type with one block in the whole configuration, itself and the
 * module calls above it without count or for_each, has one instance whose
 * address is certain. Read from the root module's .tf files and those of
 * the modules `.terraform/modules/modules.json` names; whatever could
 * make the reading wrong (JSON configuration, override files, heredocs,
 * unbalanced braces, a module call modules.json does not know)
 * gives up: nothing is named from the configuration then. The root
 * module's import blocks with a literal target and id are listed too
 * ("tftap_imports"): what they import is named after the target. Under `test`
 * every object is the configuration's (its run blocks start from nothing)
 * unless a test file runs another module with a `module` block. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "launch/hcl_int.h"
#include "launch/launch_int.h"
#include "common/common.h"

/* A block of one module: resource, data or module, with its labels. */
struct cblock {
    char *kind, *type, *name; /* module blocks: type NULL */
    int counted;              /* count or for_each */
};

/* An import block of the root module whose target and id are literals. */
struct cimport {
    char *address, *type, *id;
};

struct module_dir {
    char *key; /* "" for the root, "m.leaf" */
    char *dir; /* relative to the working directory */
    struct cblock *v;
    size_t n, cap;
    struct cimport *imports;
    size_t nimports;
};

static void blocks_free(struct module_dir *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->v[i].kind);
        free(m->v[i].type);
        free(m->v[i].name);
    }
    free(m->v);
    for (size_t i = 0; i < m->nimports; i++) {
        free(m->imports[i].address);
        free(m->imports[i].type);
        free(m->imports[i].id);
    }
    free(m->imports);
    free(m->key);
    free(m->dir);
}

static int is_name(const char *s, size_t n)
{
    if (n == 0 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
            return 0;
    return 1;
}

/* The target of an import block, t->v[i..end) after `to =`: a literal
 * resource instance address (module.NAME[KEY]... TYPE.NAME[KEY], keys a
 * number or a string without escapes), canonical as the CLI prints it
 * into addr, its type into type. 0, or -1 when it is anything else. */
static int import_target(const char *text, const struct toks *t, size_t i, size_t end,
                         tftap_buf *addr, tftap_buf *type)
{
    /* Words and the key after each, in order. */
    struct word {
        const char *s;
        size_t n;
        const struct tok *key;
    } w[2 * 16 + 2];
    size_t nw = 0;
    for (; i < end; i++) {
        const struct tok *k = &t->v[i];
        if (k->kind == TOK_IDENT) {
            const char *p = k->text;
            if (nw > 0 && p[0] != '.')
                return -1; /* two words not joined by a dot */
            while (*p) {
                if (*p == '.')
                    p++;
                size_t len = strcspn(p, ".");
                if (nw == sizeof w / sizeof w[0] || !is_name(p, len))
                    return -1;
                w[nw++] = (struct word){p, len, NULL};
                p += len;
            }
        } else if (k->kind == TOK_LBRACKET && i + 2 < end && t->v[i + 2].kind == TOK_RBRACKET &&
                   nw > 0 && w[nw - 1].key == NULL) {
            const struct tok *key = &t->v[i + 1];
            if (key->kind == TOK_STRING) {
                /* Escapes and templates are not read here. */
                for (size_t b = key->start; b < key->end; b++)
                    if (text[b] == '\\' || ((text[b] == '$' || text[b] == '%') &&
                                            b + 1 < key->end && text[b + 1] == '{'))
                        return -1;
            } else if (key->kind != TOK_IDENT ||
                       strspn(key->text, "0123456789") != strlen(key->text)) {
                return -1;
            }
            w[nw - 1].key = key;
            i += 2;
        } else {
            return -1;
        }
    }
    if (nw < 2 || nw % 2 != 0)
        return -1;
    for (size_t j = 0; j < nw; j++) {
        int module_word = j + 2 < nw && j % 2 == 0;
        if (module_word && (w[j].n != 6 || memcmp(w[j].s, "module", 6) != 0 || w[j].key))
            return -1;
        if (j == nw - 2 && (w[j].key || (w[j].n == 4 && memcmp(w[j].s, "data", 4) == 0) ||
                            (w[j].n == 6 && memcmp(w[j].s, "module", 6) == 0)))
            return -1;
        tftap_buf_printf(addr, "%s%.*s", j ? "." : "", (int)w[j].n, w[j].s);
        if (w[j].key && w[j].key->kind == TOK_STRING) {
            tftap_buf_putc(addr, '[');
            tftap_buf_json_string(addr, w[j].key->text, strlen(w[j].key->text));
            tftap_buf_putc(addr, ']');
        } else if (w[j].key) {
            tftap_buf_printf(addr, "[%s]", w[j].key->text);
        }
    }
    tftap_buf_printf(type, "%.*s", (int)w[nw - 2].n, w[nw - 2].s);
    return tftap_buf_failed(addr) || tftap_buf_failed(type) ? -1 : 0;
}

/* An import block, its tokens (open, close) (the braces): kept in m when
 * its target and id are literals and it has no for_each; else passed
 * over (nothing is named from it). -1 only when out of memory. */
static int import_block(const char *text, const struct toks *t, size_t open, size_t close,
                        struct module_dir *m)
{
    size_t to = 0, to_end = 0;
    const struct tok *id = NULL;
    int depth = 0, other = 0;
    for (size_t j = open + 1; j < close; j++) {
        const struct tok *x = &t->v[j];
        if (x->kind == TOK_LBRACE || x->kind == TOK_LBRACKET)
            depth++;
        else if (x->kind == TOK_RBRACE || x->kind == TOK_RBRACKET)
            depth--;
        else if (depth == 0 && x->kind == TOK_IDENT && j + 1 < close &&
                 t->v[j + 1].kind == TOK_EQ) {
            if (to && !to_end)
                to_end = j;
            if (strcmp(x->text, "to") == 0)
                to = j + 2;
            else if (strcmp(x->text, "id") == 0 && j + 2 < close && t->v[j + 2].kind == TOK_STRING)
                id = &t->v[j + 2];
            else if (strcmp(x->text, "for_each") == 0 || strcmp(x->text, "id") == 0)
                other = 1;
        }
    }
    if (to && !to_end)
        to_end = close;
    if (!to || !id || other)
        return 0;
    /* The id a literal string alone: no template, no escape. */
    for (size_t b = id->start; b < id->end; b++)
        if (text[b] == '\\' ||
            ((text[b] == '$' || text[b] == '%') && b + 1 < id->end && text[b + 1] == '{'))
            return 0;
    if (id + 1 < &t->v[close] && id[1].kind != TOK_IDENT)
        return 0; /* "a" + ..., or more after it */
    tftap_buf addr = TFTAP_BUF_INIT, type = TFTAP_BUF_INIT;
    int rc = 0;
    if (import_target(text, t, to, to_end, &addr, &type) == 0) {
        struct cimport *v = realloc(m->imports, (m->nimports + 1) * sizeof *v);
        if (!v) {
            rc = -1;
        } else {
            m->imports = v;
            struct cimport *c = &v[m->nimports];
            c->address = tftap_buf_take(&addr, NULL);
            c->type = tftap_buf_take(&type, NULL);
            c->id = strdup(id->text);
            m->nimports++;
            if (!c->address || !c->type || !c->id)
                rc = -1;
        }
    }
    tftap_buf_done(&addr);
    tftap_buf_done(&type);
    return rc;
}

/* The top-level blocks of one file's tokens. -1: not read with certainty. */
static int file_blocks(const char *text, const struct toks *t, struct module_dir *m)
{
    int depth = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct tok *k = &t->v[i];
        if (k->kind == TOK_LBRACE) {
            depth++;
            continue;
        }
        if (k->kind == TOK_RBRACE) {
            if (--depth < 0)
                return -1;
            continue;
        }
        if (depth != 0 || k->kind != TOK_IDENT)
            continue;
        int res = strcmp(k->text, "resource") == 0 || strcmp(k->text, "data") == 0;
        int mod = strcmp(k->text, "module") == 0;
        if (strcmp(k->text, "import") == 0 && i + 1 < t->n && t->v[i + 1].kind == TOK_LBRACE) {
            size_t j = i + 1;
            for (int d = 0; j < t->n; j++) {
                if (t->v[j].kind == TOK_LBRACE)
                    d++;
                else if (t->v[j].kind == TOK_RBRACE && --d == 0)
                    break;
            }
            if (j == t->n)
                return -1;
            /* Import blocks are the root module's only. */
            if (m->key[0] == '\0' && import_block(text, t, i + 1, j, m) != 0)
                return -1;
            i = j;
            continue;
        }
        if (!res && !mod)
            continue;
        size_t labels = res ? 2 : 1;
        if (i + labels + 1 >= t->n)
            return -1;
        for (size_t j = 1; j <= labels; j++)
            if (t->v[i + j].kind != TOK_STRING)
                return -1;
        if (t->v[i + labels + 1].kind != TOK_LBRACE)
            return -1;
        /* count or for_each among the block's own attributes. */
        int counted = 0, d = 0;
        size_t j = i + labels + 1;
        for (; j < t->n; j++) {
            const struct tok *x = &t->v[j];
            if (x->kind == TOK_LBRACE)
                d++;
            else if (x->kind == TOK_RBRACE && --d == 0)
                break;
            else if (d == 1 && x->kind == TOK_IDENT && j + 1 < t->n && t->v[j + 1].kind == TOK_EQ &&
                     (strcmp(x->text, "count") == 0 || strcmp(x->text, "for_each") == 0))
                counted = 1;
        }
        if (j == t->n)
            return -1;
        if (m->n == m->cap) {
            size_t cap = m->cap ? 2 * m->cap : 16;
            struct cblock *v = realloc(m->v, cap * sizeof *v);
            if (!v)
                return -1;
            m->v = v;
            m->cap = cap;
        }
        struct cblock *b = &m->v[m->n];
        memset(b, 0, sizeof *b);
        b->kind = strdup(k->text);
        b->type = res ? strdup(t->v[i + 1].text) : NULL;
        b->name = strdup(t->v[i + labels].text);
        b->counted = counted;
        m->n++;
        if (!b->kind || !b->name || (res && !b->type))
            return -1;
        i = j; /* past the block */
    }
    return depth == 0 ? 0 : -1;
}

/* Every block of the module in dir. -1: not read with certainty. */
static int module_blocks(const char *workdir, struct module_dir *m)
{
    tftap_buf path = TFTAP_BUF_INIT, text = TFTAP_BUF_INIT;
    int rc = 0;
    tftap_buf_printf(&path, "%s/%s", workdir, m->dir);
    DIR *d = tftap_buf_failed(&path) ? NULL : opendir(tftap_buf_cstr(&path));
    size_t dir_len = path.len;
    if (!d) {
        tftap_buf_done(&path);
        return -1;
    }
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        const char *f = e->d_name;
        if (tftap_ends_with(f, ".tf.json") || tftap_ends_with(f, "override.tf")) {
            rc = -1; /* blocks of JSON, or blocks changed from elsewhere */
            break;
        }
        if (!tftap_ends_with(f, ".tf") || f[0] == '.')
            continue;
        path.len = dir_len;
        tftap_buf_printf(&path, "/%s", f);
        tftap_buf_reset(&text);
        if (tftap_buf_failed(&path) ||
            tftap_read_file(tftap_buf_cstr(&path), CAPTURE_MAX, &text) != 0) {
            rc = -1;
            break;
        }
        if (memmem(text.data, text.len, "<<", 2) != NULL) {
            rc = -1; /* a heredoc: not tokenized faithfully */
            break;
        }
        struct toks t = {0};
        rc = hcl_tokenize(text.data, text.len, &t) != 0 ? -1 : file_blocks(text.data, &t, m);
        hcl_toks_done(&t);
    }
    closedir(d);
    tftap_buf_done(&path);
    tftap_buf_done(&text);
    return rc;
}

/* The test directory a `test` command with args reads besides the
 * working directory: -test-directory=DIR, else "tests". */
static const char *test_dir(char *const *args)
{
    const char *dir = "tests";
    for (size_t i = 0; args[i] != NULL; i++) {
        const char *a = args[i][0] == '-' && args[i][1] == '-' ? args[i] + 1 : args[i];
        if (strncmp(a, "-test-directory=", 16) == 0)
            dir = a + 16;
    }
    return dir;
}

/* Do the test files in workdir/dir run the configuration itself? 0 when
 * none has a module block (a run block's `module` runs another
 * configuration, whose objects may be of the same types), -1 when one
 * does or cannot be read with certainty (JSON, a heredoc, a .tf file in
 * the test directory). A directory that is not there holds none. */
static int test_files_plain(const char *workdir, const char *dir)
{
    tftap_buf path = TFTAP_BUF_INIT, text = TFTAP_BUF_INIT;
    int rc = 0;
    if (dir[0] == '/')
        tftap_buf_puts(&path, dir);
    else
        tftap_buf_printf(&path, "%s/%s", workdir, dir);
    DIR *d = tftap_buf_failed(&path) ? NULL : opendir(tftap_buf_cstr(&path));
    size_t dir_len = path.len;
    if (!d) {
        rc = tftap_buf_failed(&path) || errno != ENOENT ? -1 : 0;
        tftap_buf_done(&path);
        return rc;
    }
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        const char *f = e->d_name;
        /* A test file of JSON; in the test directory, a .tf file (a
         * configuration of its own beside the tests): not read. */
        if (tftap_ends_with(f, ".tftest.json") || tftap_ends_with(f, ".tofutest.json") ||
            (strcmp(dir, ".") != 0 &&
             (tftap_ends_with(f, ".tf") || tftap_ends_with(f, ".tf.json")))) {
            rc = -1;
            break;
        }
        if (!tftap_ends_with(f, ".tftest.hcl") && !tftap_ends_with(f, ".tofutest.hcl"))
            continue;
        path.len = dir_len;
        tftap_buf_printf(&path, "/%s", f);
        tftap_buf_reset(&text);
        if (tftap_buf_failed(&path) ||
            tftap_read_file(tftap_buf_cstr(&path), CAPTURE_MAX, &text) != 0 ||
            memmem(text.data, text.len, "<<", 2) != NULL) {
            rc = -1;
            break;
        }
        struct toks t = {0};
        if (hcl_tokenize(text.data, text.len, &t) != 0)
            rc = -1;
        for (size_t i = 0; rc == 0 && i + 1 < t.n; i++)
            if (t.v[i].kind == TOK_IDENT && strcmp(t.v[i].text, "module") == 0 &&
                t.v[i + 1].kind == TOK_LBRACE)
                rc = -1;
        hcl_toks_done(&t);
    }
    closedir(d);
    tftap_buf_done(&path);
    tftap_buf_done(&text);
    return rc;
}

/* modules.json: every module's key and directory, the root first. */
static int module_dirs(const char *workdir, struct module_dir **out, size_t *nout)
{
    const char *data_dir = getenv("TF_DATA_DIR");
    tftap_buf p = TFTAP_BUF_INIT, text = TFTAP_BUF_INIT;
    if (data_dir && data_dir[0] == '/')
        tftap_buf_printf(&p, "%s/modules/modules.json", data_dir);
    else
        tftap_buf_printf(&p, "%s/%s/modules/modules.json", workdir,
                         data_dir && data_dir[0] ? data_dir : ".terraform");
    struct module_dir *v = calloc(1, sizeof *v);
    size_t n = 0;
    int rc = -1;
    sj_doc *doc = NULL;
    if (!v || tftap_buf_failed(&p))
        goto done;
    v[n++] = (struct module_dir){.key = strdup(""), .dir = strdup(".")};
    if (!v[0].key || !v[0].dir)
        goto done;
    if (tftap_read_file(tftap_buf_cstr(&p), 16u << 20, &text) == 0 &&
        sj_parse(text.data, text.len, TFTAP_JSON_MAX_DEPTH, &doc) == 0) {
        const sj_node *mods = sj_get(sj_root(doc), "Modules");
        for (const sj_node *m = mods && mods->kind == SJ_ARRAY ? mods->child : NULL; m;
             m = m->next) {
            const sj_node *key = sj_get(m, "Key"), *dir = sj_get(m, "Dir");
            if (!key || key->kind != SJ_STRING || !dir || dir->kind != SJ_STRING || key->len == 0)
                continue;
            struct module_dir *nv = realloc(v, (n + 1) * sizeof *nv);
            if (!nv)
                goto done;
            v = nv;
            v[n] = (struct module_dir){.key = strdup(key->str), .dir = strdup(dir->str)};
            if (!v[n++].key || !v[n - 1].dir)
                goto done;
        }
    }
    rc = 0;
done:
    sj_free(doc);
    tftap_buf_done(&p);
    tftap_buf_done(&text);
    *out = v;
    *nout = n;
    return rc;
}

/* The module of key ("m.leaf"), or NULL. */
static struct module_dir *module_of(struct module_dir *v, size_t n, const char *key, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(v[i].key) == len && strncmp(v[i].key, key, len) == 0)
            return &v[i];
    return NULL;
}

/* Is the module of key called once (no count or for_each on the way)?
 * -1: a call modules.json and the configuration disagree about. */
static int called_once(struct module_dir *v, size_t n, const char *key)
{
    size_t len = strlen(key);
    while (len > 0) {
        size_t dot = len;
        while (dot > 0 && key[dot - 1] != '.')
            dot--;
        const struct module_dir *parent = module_of(v, n, key, dot ? dot - 1 : 0);
        const char *name = key + dot;
        size_t nlen = len - dot;
        const struct cblock *call = NULL;
        for (size_t i = 0; parent && i < parent->n; i++)
            if (strcmp(parent->v[i].kind, "module") == 0 && strlen(parent->v[i].name) == nlen &&
                strncmp(parent->v[i].name, name, nlen) == 0)
                call = &parent->v[i];
        if (!call)
            return -1;
        if (call->counted)
            return 0;
        len = dot ? dot - 1 : 0;
    }
    return 1;
}

int launch_config_doc(const char *workdir, char *const *test_args, tftap_buf *out)
{
    struct module_dir *mods = NULL;
    size_t nmods = 0;
    int rc = module_dirs(workdir, &mods, &nmods);
    if (rc == 0 && test_args != NULL &&
        (test_files_plain(workdir, ".") != 0 ||
         test_files_plain(workdir, test_dir(test_args)) != 0))
        rc = -1;
    for (size_t i = 0; rc == 0 && i < nmods; i++)
        rc = module_blocks(workdir, &mods[i]);
    /* Every module call is one modules.json knows. */
    tftap_buf key = TFTAP_BUF_INIT;
    for (size_t i = 0; rc == 0 && i < nmods; i++)
        for (size_t j = 0; rc == 0 && j < mods[i].n; j++) {
            if (strcmp(mods[i].v[j].kind, "module") != 0)
                continue;
            tftap_buf_reset(&key);
            tftap_buf_printf(&key, "%s%s%s", mods[i].key, mods[i].key[0] ? "." : "",
                             mods[i].v[j].name);
            if (tftap_buf_failed(&key) || !module_of(mods, nmods, key.data, key.len))
                rc = -1;
        }
    tftap_buf_reset(out);
    tftap_buf_puts(out, "{\"tftap_config\":[");
    int first = 1;
    tftap_buf addr = TFTAP_BUF_INIT;
    for (size_t i = 0; rc == 0 && i < nmods; i++) {
        int once = mods[i].key[0] ? called_once(mods, nmods, mods[i].key) : 1;
        if (once < 0) {
            rc = -1;
            break;
        }
        for (size_t j = 0; j < mods[i].n; j++) {
            const struct cblock *b = &mods[i].v[j];
            if (!b->type)
                continue;
            int data = strcmp(b->kind, "data") == 0;
            tftap_buf_reset(&addr);
            /* "m.leaf" is module.m.module.leaf */
            for (const char *k = mods[i].key; *k;) {
                size_t seg = strcspn(k, ".");
                tftap_buf_printf(&addr, "module.%.*s.", (int)seg, k);
                k += seg + (k[seg] == '.');
            }
            tftap_buf_printf(&addr, "%s%s.%s", data ? "data." : "", b->type, b->name);
            tftap_buf_puts(out, first ? "" : ",");
            first = 0;
            tftap_buf_puts(out, "{\"address\":");
            tftap_buf_json_string(out, addr.data, addr.len);
            tftap_buf_puts(out, ",\"type\":");
            tftap_buf_json_string(out, b->type, strlen(b->type));
            tftap_buf_printf(out, ",\"mode\":\"%s\",\"certain\":%s}", data ? "data" : "managed",
                             once == 1 && !b->counted ? "true" : "false");
        }
    }
    tftap_buf_puts(out, "]");
    /* The root module's import blocks: what they import is named by the
     * ImportResourceState call that asked for its id. */
    if (rc == 0 && nmods > 0 && mods[0].nimports > 0) {
        tftap_buf_puts(out, ",\"tftap_imports\":[");
        for (size_t i = 0; i < mods[0].nimports; i++) {
            const struct cimport *c = &mods[0].imports[i];
            tftap_buf_puts(out, i ? ",{\"address\":" : "{\"address\":");
            tftap_buf_json_string(out, c->address, strlen(c->address));
            tftap_buf_puts(out, ",\"type\":");
            tftap_buf_json_string(out, c->type, strlen(c->type));
            tftap_buf_puts(out, ",\"id\":");
            tftap_buf_json_string(out, c->id, strlen(c->id));
            tftap_buf_putc(out, '}');
        }
        tftap_buf_putc(out, ']');
    }
    /* A test's run blocks start from nothing and make only what the
     * configuration declares: every object of the run is one of its. */
    if (test_args != NULL)
        tftap_buf_puts(out, ",\"tftap_config_whole\":true");
    tftap_buf_puts(out, "}");
    tftap_buf_done(&addr);
    tftap_buf_done(&key);
    for (size_t i = 0; i < nmods; i++)
        blocks_free(&mods[i]);
    free(mods);
    if (rc == 0 && tftap_buf_failed(out))
        rc = -1;
    if (rc != 0)
        tftap_buf_reset(out);
    return rc;
}
