/* cli: tftap run's last word on secrets. The values core hides are known
 * from the plan and the state documents the address matching read, and,
 * where no document holds them yet (a plan not saved creates nothing in
 * the state), from the configuration: a variable declared sensitive, with
 * the value the command gives it (-var, a -var-file, terraform.tfvars,
 * *.auto.tfvars, TF_VAR_name, its default). The run's record is redacted
 * by them (analysis_redact_run) and the file scrubbed of what it held. */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "cli/cli.h"
#include "cli/hcl.h"
#include "cli/run_int.h"
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

/* A root module file's `variable "NAME" { sensitive = true ... }` blocks:
 * their names, and their defaults as secrets. */
static void declared(const struct toks *t, struct names *ns, analysis_secrets *a)
{
    int depth = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct tok *k = &t->v[i];
        if (k->kind == TOK_LBRACE || k->kind == TOK_RBRACE) {
            depth += k->kind == TOK_LBRACE ? 1 : -1;
            continue;
        }
        if (depth != 0 || k->kind != TOK_IDENT || strcmp(k->text, "variable") != 0 ||
            i + 2 >= t->n || t->v[i + 1].kind != TOK_STRING || t->v[i + 2].kind != TOK_LBRACE)
            continue;
        int sensitive = 0, d = 0;
        size_t dflt = 0, j = i + 2;
        for (; j < t->n; j++) {
            const struct tok *x = &t->v[j];
            if (x->kind == TOK_LBRACE)
                d++;
            else if (x->kind == TOK_RBRACE && --d == 0)
                break;
            else if (d == 1 && x->kind == TOK_IDENT && j + 2 < t->n && t->v[j + 1].kind == TOK_EQ) {
                if (strcmp(x->text, "sensitive") == 0 && t->v[j + 2].kind == TOK_IDENT &&
                    strcmp(t->v[j + 2].text, "true") == 0)
                    sensitive = 1;
                else if (strcmp(x->text, "default") == 0)
                    dflt = j + 2;
            }
        }
        if (sensitive) {
            if (names_add(ns, t->v[i + 1].text) != 0)
                return;
            if (dflt)
                value_strings(a, t, dflt);
        }
        i = j;
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

/* What the configuration says is secret, with the values this command
 * gives it. */
static void from_config(analysis_secrets *a, const char *workdir, char *const *args,
                        char *const *env)
{
    struct names ns = {0};
    tftap_buf path = TFTAP_BUF_INIT;
    DIR *d = opendir(workdir);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' || !tftap_ends_with(de->d_name, ".tf"))
            continue;
        tftap_buf_reset(&path);
        tftap_buf_printf(&path, "%s/%s", workdir, de->d_name);
        struct toks t = {0};
        if (!tftap_buf_failed(&path) && file_toks(tftap_buf_cstr(&path), &t) == 0)
            declared(&t, &ns, a);
        hcl_toks_done(&t);
    }
    if (d)
        closedir(d);
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
        cli_error("out of memory looking for the run's sensitive values: run %lld may hold "
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
        cli_error("could not redact the values core marks sensitive in run %lld (%s): the "
                  "record holds them in clear; remove it with care",
                  (long long)run_id, rc == TFTAP_ESTORE ? store_errmsg(s) : tftap_strerror(rc));
    else if (rewrite && (r.calls > 0 || r.arguments > 0)) {
        int scrubbed = store_scrub(s);
        if (scrubbed == 1)
            cli_error("a reader of the database kept its write-ahead log from being emptied: "
                      "the log holds run %lld's sensitive values until the last connection to it "
                      "closes",
                      (long long)run_id);
        else if (scrubbed == 2)
            cli_error("run %lld's sensitive values are redacted, but the database file was not "
                      "rewritten (over %lld MiB, or busy): copies may remain in its unused space "
                      "until it is (sqlite3 FILE VACUUM, or tftap prune)",
                      (long long)run_id, (long long)(STORE_SCRUB_VACUUM_MAX >> 20));
    }
    analysis_secrets_free(a);
    return rc == 0 && r.calls > 0;
}
