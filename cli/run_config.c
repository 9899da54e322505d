/* tftap run: the configuration's resource blocks, for the address matching
 * of a plan not saved to a file (analysis_match_doc, "tftap_config"). A
 * resource type with one block in the whole configuration, itself and the
 * module calls above it without count or for_each, has one instance whose
 * address is certain. Read from the root module's .tf files and those of
 * the modules `.terraform/modules/modules.json` names; whatever could
 * make the reading wrong (JSON configuration, override files, heredocs,
 * unbalanced braces, a module call modules.json does not know)
 * gives up: nothing is named from the configuration then. Under `test`
 * every object is the configuration's (its run blocks start from nothing)
 * unless a test file runs another module with a `module` block. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/hcl.h"
#include "cli/run_int.h"
#include "common/common.h"

/* A block of one module: resource, data or module, with its labels. */
struct cblock {
    char *kind, *type, *name; /* module blocks: type NULL */
    int counted;              /* count or for_each */
};

struct module_dir {
    char *key; /* "" for the root, "m.leaf" */
    char *dir; /* relative to the working directory */
    struct cblock *v;
    size_t n, cap;
};

static void blocks_free(struct module_dir *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->v[i].kind);
        free(m->v[i].type);
        free(m->v[i].name);
    }
    free(m->v);
    free(m->key);
    free(m->dir);
}

/* The top-level blocks of one file's tokens. -1: not read with certainty. */
static int file_blocks(const struct toks *t, struct module_dir *m)
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
        rc = hcl_tokenize(text.data, text.len, &t) != 0 ? -1 : file_blocks(&t, m);
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

int run_config_doc(const char *workdir, char *const *test_args, tftap_buf *out)
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
