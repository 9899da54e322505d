/* cli: `tftap run --reattach`, where tftap starts each provider itself.
 * One child process per provider runs proxy_run() (which owns the process:
 * it blocks signals, reaps and relays) and prints go-plugin's handshake
 * line; the CLI is told where to connect through TF_REATTACH_PROVIDERS and
 * launches nothing. Closing a child's stop pipe ends it and its provider. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/run_int.h"
#include "plugin/plugin.h"
#include "proxy/proxy.h"

static void reattach_warn(void *ctx, const char *message)
{
    (void)ctx;
    cli_error("%s", message);
}

/* Read one handshake line (at most 64 KiB) from fd. */
static int read_line(int fd, tftap_buf *line)
{
    char c;
    for (;;) {
        ssize_t n = read(fd, &c, 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return line->len ? 0 : -1;
        if (c == '\n')
            return 0;
        if (line->len >= 65536)
            return -1;
        tftap_buf_putc(line, c);
    }
}

void reattach_stop(struct reattached *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (r[i].stop_w >= 0) {
            close(r[i].stop_w);
            r[i].stop_w = -1;
        }
    for (size_t i = 0; i < n; i++)
        if (r[i].pid > 0) {
            while (waitpid(r[i].pid, NULL, 0) < 0 && errno == EINTR)
                ;
            r[i].pid = 0;
        }
}

int reattach_start(const struct wrap_set *set, const struct wrap_opts *o, int64_t run_id,
                   const char *run_dir, struct reattached *r, tftap_buf *json, tftap_buf *err)
{
    static char cookie[] = PLUGIN_COOKIE_KEY "=" PLUGIN_COOKIE_VALUE;
    char *add[1] = {cookie};
    char **env = run_env_with(add, 1);
    size_t started = 0;
    int rc = TFTAP_ECHILD;

    if (env == NULL) {
        tftap_buf_puts(err, "out of memory");
        return TFTAP_ENOMEM;
    }
    tftap_buf_putc(json, '{');
    for (size_t i = 0; i < set->n; i++) {
        const struct wrap_provider *p = &set->v[i];
        int hs[2], stop[2];
        r[i].pid = 0;
        r[i].stop_w = -1;
        if (pipe2(hs, O_CLOEXEC) != 0)
            goto fail_errno;
        if (pipe2(stop, O_CLOEXEC) != 0) {
            close(hs[0]);
            close(hs[1]);
            goto fail_errno;
        }
        pid_t pid = fork();
        if (pid < 0) {
            close(hs[0]);
            close(hs[1]);
            close(stop[0]);
            close(stop[1]);
            goto fail_errno;
        }
        if (pid == 0) {
            /* Earlier proxies must see EOF on their stop pipes when the
             * parent closes them: hold no copies. */
            for (size_t j = 0; j < i; j++)
                close(r[j].stop_w);
            close(hs[0]);
            close(stop[1]);
            proxy_config cfg;
            tftap_buf e = TFTAP_BUF_INIT;
            proxy_config_init(&cfg);
            cfg.provider = p->addr;
            cfg.version = p->version;
            cfg.binary = p->binary;
            cfg.envp = env;
            cfg.db = o->db;
            cfg.run_id = run_id;
            cfg.record_sensitive = o->record_sensitive;
            cfg.keep_raw = o->keep_raw;
            cfg.out_fd = hs[1];
            cfg.watch_out_fd = 0; /* the parent stops reading after the handshake */
            cfg.stop_fd = stop[0];
            cfg.warn = reattach_warn;
            cfg.recorder_hold_fd = wrap_recorder_lock(run_dir, p->addr);
            otlp_config oc;
            char *otlp_url = NULL;
            if (cli_otlp_config(NULL, 0, &oc, &otlp_url) == 1)
                cfg.otlp = &oc;
            int code = proxy_run(&cfg, &e);
            free(otlp_url);
            if (e.len)
                cli_error("%s: %s", p->addr, tftap_buf_cstr(&e));
            fflush(stderr);
            _exit(code);
        }
        close(hs[1]);
        close(stop[0]);
        r[i].pid = pid;
        r[i].stop_w = stop[1];
        started = i + 1;

        /* 1|PROTO|unix|ADDRESS|grpc|CERT */
        tftap_buf line = TFTAP_BUF_INIT;
        int lrc = read_line(hs[0], &line);
        close(hs[0]);
        char *fields[6] = {0};
        size_t nf = 0;
        char *text = line.data;
        if (lrc == 0 && text != NULL) {
            /* Split in place at '|'; empty fields stay (the certificate may be). */
            while (nf < 6) {
                fields[nf++] = text;
                char *bar = strchr(text, '|');
                if (bar == NULL)
                    break;
                *bar = '\0';
                text = bar + 1;
            }
        }
        if (nf < 5 || strcmp(fields[2], "unix") != 0 || strcmp(fields[4], "grpc") != 0) {
            tftap_buf_printf(err, "%s did not start behind the proxy", p->addr);
            tftap_buf_done(&line);
            goto fail;
        }
        char *end = NULL;
        long proto = strtol(fields[1], &end, 10);
        if (i)
            tftap_buf_putc(json, ',');
        tftap_buf_json_string(json, p->addr, strlen(p->addr));
        tftap_buf_printf(json,
                         ":{\"Protocol\":\"grpc\",\"ProtocolVersion\":%ld,\"Pid\":%d,"
                         "\"Test\":true,\"Addr\":{\"Network\":\"unix\",\"String\":",
                         (end && *end == '\0') ? proto : 5, (int)pid);
        tftap_buf_json_string(json, fields[3], strlen(fields[3]));
        tftap_buf_puts(json, "}}");
        tftap_buf_done(&line);
    }
    tftap_buf_putc(json, '}');
    free(env);
    if (tftap_buf_failed(json)) {
        tftap_buf_puts(err, "out of memory");
        reattach_stop(r, started);
        return TFTAP_ENOMEM;
    }
    return 0;

fail_errno:
    tftap_buf_printf(err, "cannot start a provider: %s", strerror(errno));
fail:
    reattach_stop(r, started);
    free(env);
    return rc;
}
