/* cli: what `tftap run` (run.c) shares with the files beside it: the
 * child processes it starts besides the user's command (run_child.c) and
 * the providers it starts itself with --reattach (run_reattach.c). */
#ifndef TFTAP_CLI_RUN_INT_H
#define TFTAP_CLI_RUN_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cli/wrap.h"
#include "common/common.h"

/* How much of `CLI show -json` (a large state) and `CLI version -json` is
 * kept. */
#define CAPTURE_MAX (256u << 20)
#define VERSION_MAX (64u << 10)

/* ---- run_child.c ---- */

/* An environment like ours with the given variables set (name=value
 * strings, replacing ours). The array is heap; its strings are borrowed
 * except the new ones, which the caller keeps alive. NULL: out of memory. */
char **run_env_with(char *const *add, size_t nadd);

/* A command started with its stdout into a pipe (capture_start), read and
 * reaped later (capture_finish). */
struct captured {
    pid_t pid; /* 0: not started */
    int fd;
};

/* Start argv in dir (NULL: ours) with env (NULL: ours), stdout into a
 * pipe, stdin and stderr on /dev/null. 0, or -1 when it could not be
 * started. */
int capture_start(char *const *argv, char *const *env, const char *dir, struct captured *c);
/* Its stdout into out (at most max bytes kept), then its exit status as
 * run_command gives it, or -1 when it was not started. */
int capture_finish(struct captured *c, size_t max, tftap_buf *out);
/* Both at once. */
int capture(char *const *argv, char *const *env, const char *dir, size_t max, tftap_buf *out);

/* `CLI version -json`, started (the CLI's start-up is most of its cost:
 * it runs beside tftap's own work after the command) and read later: the
 * version it printed, or NULL, remembered for the next run
 * (cli_version.c). A CLI not started (c->pid 0) is read as nothing. */
void cli_version_start(const char *cli_path, struct captured *c);
char *cli_version_finish(const char *cli_path, struct captured *c);

/* ---- run_reattach.c: --reattach, tftap starts each provider itself ---- */

struct reattached {
    pid_t pid;
    int stop_w; /* write end of the stop pipe, -1 once closed */
};

/* Start every provider of set behind a proxy recording into run_id; fills
 * json with the value of TF_REATTACH_PROVIDERS. On failure everything
 * started is stopped again and err says why. */
int reattach_start(const struct wrap_set *set, const struct wrap_opts *o, int64_t run_id,
                   const char *run_dir, struct reattached *r, tftap_buf *json, tftap_buf *err);
/* End the n proxies (closing their stop pipes) and their providers, and
 * reap them. */
void reattach_stop(struct reattached *r, size_t n);

#endif
