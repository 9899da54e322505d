/* launch: the state a command starts from, read before it runs (what the
 * matching after it compares with, the only record of objects a plan not
 * saved to a file never names) and by the plan made again (run_replan.c)
 * and a wrapped command's last recorder (shim.c); and the command's words
 * as its run recorded them, for those who redact a run after it. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "launch/launch_int.h"
#include "store/store.h"

/* The local state file the command will start from, when nothing but the
 * defaults decide where it is: no backend configured in the data dir (a
 * backend, even "local" with a path, is left to `state pull`), no -state
 * flag. The workspace comes from TF_WORKSPACE or the data dir's
 * "environment" file. 1 with *path set (heap), 0 when it cannot be told. */
static int local_state_path(const char *workdir, char *const *args, char **path)
{
    for (size_t i = 0; args[i] != NULL; i++) {
        const char *a = args[i][0] == '-' && args[i][1] == '-' ? args[i] + 1 : args[i];
        if (strncmp(a, "-state", 6) == 0 || strncmp(a, "-backend", 8) == 0)
            return 0;
    }
    const char *data_dir = getenv("TF_DATA_DIR");
    tftap_buf p = TFTAP_BUF_INIT, ws = TFTAP_BUF_INIT;
    int ok = 0;
    if (data_dir != NULL && data_dir[0] == '/')
        tftap_buf_puts(&p, data_dir);
    else
        tftap_buf_printf(&p, "%s/%s", workdir,
                         data_dir != NULL && data_dir[0] ? data_dir : ".terraform");
    size_t dir_len = p.len;
    struct stat st;
    tftap_buf_puts(&p, "/terraform.tfstate");
    if (tftap_buf_failed(&p) || lstat(tftap_buf_cstr(&p), &st) == 0 || errno != ENOENT)
        goto done; /* a backend is configured (or we cannot tell) */
    const char *env_ws = getenv("TF_WORKSPACE");
    if (env_ws != NULL && env_ws[0] != '\0') {
        tftap_buf_puts(&ws, env_ws);
    } else {
        p.len = dir_len;
        tftap_buf_puts(&p, "/environment");
        if (tftap_read_file(tftap_buf_cstr(&p), 4096, &ws) != 0 && errno != ENOENT)
            goto done;
        while (ws.len > 0 && (ws.data[ws.len - 1] == '\n' || ws.data[ws.len - 1] == ' '))
            ws.len--;
    }
    const char *name = tftap_buf_cstr(&ws);
    if (tftap_buf_failed(&ws) || strchr(name, '/') != NULL || strcmp(name, "..") == 0)
        goto done;
    tftap_buf_reset(&p);
    if (name[0] == '\0' || strcmp(name, "default") == 0)
        tftap_buf_printf(&p, "%s/terraform.tfstate", workdir);
    else
        tftap_buf_printf(&p, "%s/terraform.tfstate.d/%s/terraform.tfstate", workdir, name);
    if (!tftap_buf_failed(&p)) {
        *path = tftap_buf_take(&p, NULL);
        ok = *path != NULL;
    }
done:
    tftap_buf_done(&p);
    tftap_buf_done(&ws);
    return ok;
}

int run_local_state(const char *workdir, char *const *args, tftap_buf *out)
{
    char *path = NULL;
    if (!local_state_path(workdir, args, &path))
        return -1;
    int rc = tftap_read_file(path, CAPTURE_MAX, out);
    free(path);
    if (rc == TFTAP_EIO && errno == ENOENT) {
        rc = 0; /* no state yet */
        tftap_buf_reset(out);
    }
    if (rc == 0 && out->len > 0 && memmem(out->data, out->len, "\"encrypted_data\"", 16) != NULL)
        rc = TFTAP_EDECODE;
    if (rc != 0)
        tftap_buf_reset(out);
    return rc == 0 ? 0 : -1;
}

/* Read from the file when it is local by default (a `CLI state pull` costs
 * a whole CLI start, and reads the same file), else `CLI state pull`, which
 * starts no provider (also for an encrypted file: the CLI decrypts it). */
int run_state_before(const char *cli_path, char *const *env, const char *workdir, char *const *args,
                     tftap_buf *out)
{
    if (run_local_state(workdir, args, out) == 0)
        return 0;
    char *argv[] = {(char *)cli_path, "state", "pull", NULL};
    int rc = capture(argv, env, workdir, CAPTURE_MAX, out);
    if (rc != 0 || tftap_buf_failed(out)) {
        tftap_buf_reset(out);
        return -1;
    }
    return 0;
}

static int take_words(void *ctx, const store_run_row *row)
{
    struct run_words *w = ctx;
    sj_doc *d = NULL;
    w->cwd = row->cwd ? strdup(row->cwd) : NULL;
    if (row->args_json && sj_parse(row->args_json, strlen(row->args_json), 8, &d) == 0 &&
        sj_root(d)->kind == SJ_ARRAY) {
        w->args = calloc(sj_root(d)->n + 1, sizeof *w->args);
        for (const sj_node *a = sj_root(d)->child; w->args && a; a = a->next)
            if (a->kind == SJ_STRING && (w->args[w->n] = strdup(a->str)) != NULL)
                w->n++;
    }
    sj_free(d);
    return 0;
}

int run_words_read(store *s, int64_t run_id, struct run_words *w)
{
    return store_run_get(s, run_id, take_words, w);
}

void run_words_done(struct run_words *w)
{
    for (size_t i = 0; i < w->n; i++)
        free(w->args[i]);
    free(w->args);
    free(w->cwd);
    *w = (struct run_words){NULL, NULL, 0};
}
