/* launch: an acceptance test step's working directory, kept with its run.
 *
 * terraform-plugin-testing removes a test's working directories when the
 * test ends, and with them what a step's command needs to run again: its
 * configuration, the state it started from, the lock file and a saved
 * plan. The front (run.c) reads the files at the top of the directory
 * before the command runs, and stores them with the step run once the
 * record is complete (run_files, schema 10), so that `tftap replay STEP`
 * can lay the directory out again (replay_step.c).
 *
 * Secrets: the record holds no value core or the schema treats as secret
 * (redacted), and these files would. Unless the run keeps values in clear
 * (--record-sensitive), a step whose record holds a redacted value, or
 * whose state marks one or holds a value its provider's schema marks
 * sensitive or write-only, keeps only its lock file: the other files are
 * listed with a note and no content. So does a step whose record is not
 * complete yet (a finisher ends it later): nothing can be judged. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "launch/launch_int.h"
#include "decoder/decoder.h"
#include "store/store.h"

#define LOCK_FILE ".terraform.lock.hcl"
#define STATE_FILE "terraform.tfstate"

static const char note_secret[] = "may hold a secret (kept only with --record-sensitive)";
static const char note_unfinished[] = "not kept: the record was not complete when the command "
                                      "ended (nothing tells whether it holds a secret)";

static int file_name_cmp(const void *a, const void *b)
{
    return strcmp(((const struct workdir_file *)a)->name, ((const struct workdir_file *)b)->name);
}

/* Files the command does not read: the state's backup and its lock. */
static int skipped(const char *name)
{
    return strcmp(name, STATE_FILE ".backup") == 0 ||
           strcmp(name, ".terraform.tfstate.lock.info") == 0;
}

/* Read the regular file name in the directory dfd into out, at most max
 * bytes: opened without following a link or waiting on a FIFO (the
 * directory may change under us), and checked to be a regular file. 0,
 * TFTAP_ELIMIT, TFTAP_EIO, TFTAP_ENOMEM. */
static int read_regular(int dfd, const char *name, size_t max, tftap_buf *out)
{
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return TFTAP_EIO;
    struct stat st;
    int rc = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? 0 : TFTAP_EIO;
    char chunk[65536];
    while (rc == 0) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            rc = TFTAP_EIO;
        else if (n == 0)
            break;
        else if (out->len + (size_t)n > max)
            rc = TFTAP_ELIMIT;
        else {
            tftap_buf_append(out, chunk, (size_t)n);
            if (tftap_buf_failed(out))
                rc = TFTAP_ENOMEM;
        }
    }
    close(fd);
    return rc;
}

void workdir_snap_take(const char *workdir, struct workdir_snap *w)
{
    memset(w, 0, sizeof *w);
    DIR *d = opendir(workdir);
    if (d == NULL)
        return;
    size_t total = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && w->n < WORKDIR_FILES_MAX) {
        struct stat st;
        if (e->d_name[0] == '\0' || strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            skipped(e->d_name) || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        if (w->n == w->cap) {
            size_t cap = w->cap ? w->cap * 2 : 8;
            struct workdir_file *v = realloc(w->v, cap * sizeof *v);
            if (v == NULL)
                break;
            w->v = v;
            w->cap = cap;
        }
        struct workdir_file *f = &w->v[w->n];
        memset(f, 0, sizeof *f);
        if ((f->name = strdup(e->d_name)) == NULL)
            break;
        w->n++;
        f->size = (int64_t)st.st_size;
        if ((uint64_t)st.st_size > WORKDIR_FILE_MAX) {
            f->note = "over the size limit of a kept file (8 MiB)";
            continue;
        }
        if (total + (size_t)st.st_size > WORKDIR_TOTAL_MAX) {
            f->note = "over the size limit of a kept directory (32 MiB)";
            continue;
        }
        int rc = read_regular(dirfd(d), e->d_name, WORKDIR_FILE_MAX, &f->content);
        if (rc != 0) {
            tftap_buf_done(&f->content);
            f->note = rc == TFTAP_ELIMIT ? "over the size limit of a kept file (8 MiB)"
                                         : "could not be read";
            continue;
        }
        f->size = (int64_t)f->content.len;
        tftap_sha256_hex(f->content.data ? f->content.data : "", f->content.len, f->sha256);
        f->kept = 1;
        total += f->content.len;
    }
    closedir(d);
    if (w->n > 1)
        qsort(w->v, w->n, sizeof *w->v, file_name_cmp);
    w->taken = 1;
}

void workdir_snap_done(struct workdir_snap *w)
{
    for (size_t i = 0; i < w->n; i++) {
        free(w->v[i].name);
        tftap_buf_done(&w->v[i].content);
    }
    free(w->v);
    memset(w, 0, sizeof *w);
}

/* ---- does the state hold a secret? ---- */

struct schema_cache {
    char *provider;
    dec_schema *schema; /* NULL: none recorded */
    int protocol;
};

static void set_flag(void *ctx, const char *json, size_t len, char out[65])
{
    (void)json;
    (void)len;
    *(int *)ctx = 1;
    memset(out, '0', 64);
    out[64] = '\0';
}

/* "provider[\"ADDR\"]" (a state's provider field) -> ADDR, heap. */
static char *state_provider_addr(const sj_node *n)
{
    if (n == NULL || n->kind != SJ_STRING)
        return NULL;
    const char *open = strstr(n->str, "[\"");
    const char *close = open ? strstr(open + 2, "\"]") : NULL;
    return close ? strndup(open + 2, (size_t)(close - open - 2)) : NULL;
}

static const struct schema_cache *schema_of(store *s, int64_t run_id, struct schema_cache *c,
                                            size_t *nc, size_t cap, const char *provider)
{
    for (size_t i = 0; i < *nc; i++)
        if (strcmp(c[i].provider, provider) == 0)
            return &c[i];
    if (*nc == cap)
        return NULL;
    struct schema_cache *e = &c[*nc];
    memset(e, 0, sizeof *e);
    if ((e->provider = strdup(provider)) == NULL)
        return NULL;
    (*nc)++;
    tftap_buf raw = TFTAP_BUF_INIT;
    dec_error err = DEC_ERROR_INIT;
    if (store_run_provider_schema(s, run_id, provider, &e->protocol, &raw, NULL) == 0)
        (void)dec_schema_from_provider_schema(e->protocol, raw.data, raw.len, NULL, &e->schema,
                                              &err);
    dec_error_done(&err);
    tftap_buf_done(&raw);
    return e;
}

/* 1 when the state (the file's text) may hold a secret: a value where it
 * marks one (sensitive_attributes, a sensitive output), or a value of an
 * attribute the provider's schema marks sensitive or write-only, or it
 * cannot be told (not JSON, no schema for a provider). */
static int state_holds_secret(store *s, int64_t run_id, const tftap_buf *state)
{
    int secret = 0;
    analysis_secrets *a = analysis_secrets_new();
    if (a == NULL || analysis_secrets_add_doc(a, state->data, state->len) != 0 ||
        analysis_secrets_count(a) > 0) {
        analysis_secrets_free(a);
        return 1;
    }
    analysis_secrets_free(a);
    /* The CLI marks a schema's sensitive attributes even when null
     * (sensitive_attributes): the values at the marks are what counts,
     * above, and the schema's own marks on the values, below. */
    sj_doc *doc = NULL;
    if (sj_parse(state->data, state->len, 0, &doc) != 0)
        return 1;
    struct schema_cache cache[16];
    size_t ncache = 0;
    const sj_node *resources = sj_get(sj_root(doc), "resources");
    for (const sj_node *r = resources && resources->kind == SJ_ARRAY ? resources->child : NULL;
         r != NULL && !secret; r = r->next) {
        const sj_node *mode = sj_get(r, "mode"), *type = sj_get(r, "type");
        const sj_node *instances = sj_get(r, "instances");
        char *provider = state_provider_addr(sj_get(r, "provider"));
        int is_data = mode && mode->kind == SJ_STRING && strcmp(mode->str, "data") == 0;
        const struct schema_cache *sc =
            provider
                ? schema_of(s, run_id, cache, &ncache, sizeof cache / sizeof cache[0], provider)
                : NULL;
        free(provider);
        if (type == NULL || type->kind != SJ_STRING || sc == NULL || sc->schema == NULL) {
            secret = 1;
            break;
        }
        for (const sj_node *in = instances && instances->kind == SJ_ARRAY ? instances->child : NULL;
             in != NULL && !secret; in = in->next) {
            const sj_node *attrs = sj_get(in, "attributes");
            if (attrs == NULL)
                continue;
            /* The schema's own rule, as for a recorded answer holding the
             * instance's values (a read's new state). */
            tftap_buf msg = TFTAP_BUF_INIT, out = TFTAP_BUF_INIT;
            tftap_buf_puts(&msg, is_data ? "{\"state\":" : "{\"new_state\":");
            sj_write(attrs, &msg);
            tftap_buf_putc(&msg, '}');
            char method[64];
            snprintf(method, sizeof method, "/tfplugin%d.Provider/%s", sc->protocol == 5 ? 5 : 6,
                     is_data ? "ReadDataSource" : "ReadResource");
            dec_opts opts = {.redact = set_flag, .redact_ctx = &secret};
            dec_error err = DEC_ERROR_INIT;
            if (tftap_buf_failed(&msg) ||
                dec_message_json_redact(method, 1, msg.data, msg.len, sc->schema, type->str, &opts,
                                        &out, &err) != 0)
                secret = 1;
            dec_error_done(&err);
            tftap_buf_done(&msg);
            tftap_buf_done(&out);
        }
    }
    for (size_t i = 0; i < ncache; i++) {
        free(cache[i].provider);
        dec_schema_free(cache[i].schema);
    }
    sj_free(doc);
    return secret;
}

static int run_ended(void *ctx, const store_run_row *row)
{
    *(int *)ctx = row->ended_us > 0;
    return 0;
}

void workdir_snap_store(const char *db, int64_t run_id, const struct workdir_snap *w)
{
    if (!w->taken || run_id <= 0 || w->n == 0)
        return;
    store *s = NULL;
    int rc = store_open(db, 0, &s);
    int kept = 0, redacted = 0, ended = 0;
    /* A run whose end a finisher records later (the database was away) is
     * not redacted yet: what it holds cannot be judged now. */
    if (rc == 0)
        rc = store_run_get(s, run_id, run_ended, &ended);
    if (rc == 0)
        rc = store_run_values_kept(s, run_id, &kept);
    if (rc == 0 && !kept)
        rc = store_run_holds_redacted(s, run_id, &redacted);
    if (rc != 0) {
        launch_error("cannot keep the working directory of run %lld in %s: %s", (long long)run_id,
                     STORE_SHOWN(db), s ? store_errmsg(s) : tftap_strerror(rc));
        store_close(s);
        return;
    }
    int secret = !ended && !kept;
    if (!kept && ended) {
        secret = redacted;
        for (size_t i = 0; i < w->n && !secret; i++)
            if (strcmp(w->v[i].name, STATE_FILE) == 0 && w->v[i].kept)
                secret = state_holds_secret(s, run_id, &w->v[i].content);
    }
    store_run_file *rows = calloc(w->n ? w->n : 1, sizeof *rows);
    for (size_t i = 0; rows != NULL && i < w->n; i++) {
        const struct workdir_file *f = &w->v[i];
        /* The lock file names providers and their checksums only. */
        int withheld = secret && f->kept && strcmp(f->name, LOCK_FILE) != 0;
        rows[i] = (store_run_file){
            .name = f->name,
            .size = f->size,
            .sha256 = f->kept ? f->sha256 : "",
            .content = f->kept && !withheld ? (f->content.data ? f->content.data : "") : NULL,
            .content_len = f->content.len,
            .note = withheld ? (ended ? note_secret : note_unfinished) : f->note,
        };
    }
    rc = rows == NULL ? TFTAP_ENOMEM : store_run_files_add(s, run_id, rows, w->n);
    free(rows);
    if (rc != 0)
        launch_error("cannot keep the working directory of run %lld in %s: %s", (long long)run_id,
                     STORE_SHOWN(db), rc == TFTAP_ENOMEM ? "out of memory" : store_errmsg(s));
    store_close(s);
}
