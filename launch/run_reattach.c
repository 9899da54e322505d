/* launch: `tftap run --reattach`, where tftap starts each provider itself.
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

#include "launch/launch_int.h"
#include "plugin/plugin.h"
#include "proxy/proxy.h"

static void reattach_warn(void *ctx, const char *message)
{
    (void)ctx;
    launch_error("%s", message);
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

/* Fork the proxy of r[i] (cfg filled in but for the fds), and read its
 * handshake line into line. Earlier proxies' stop pipes are not inherited.
 * 0, or -1 with err saying why (r[i] then holds what must be stopped). */
static int spawn_proxy(struct reattached *r, size_t i, proxy_config *cfg, const char *run_dir,
                       tftap_buf *line, tftap_buf *err)
{
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
        tftap_buf e = TFTAP_BUF_INIT;
        cfg->out_fd = hs[1];
        cfg->watch_out_fd = 0; /* the parent stops reading after the handshake */
        cfg->stop_fd = stop[0];
        cfg->warn = reattach_warn;
        cfg->recorder_hold_fd = launch_recorder_lock(run_dir, cfg->provider);
        otlp_config oc;
        char *otlp_url = NULL;
        if (launch_otlp_config(NULL, 0, &oc, &otlp_url) == 1)
            cfg->otlp = &oc;
        int code = cfg->attach_address != NULL ? proxy_attach(cfg, &e) : proxy_run(cfg, &e);
        free(otlp_url);
        if (e.len)
            launch_error("%s: %s", cfg->provider, tftap_buf_cstr(&e));
        fflush(stderr);
        _exit(code);
    }
    close(hs[1]);
    close(stop[0]);
    r[i].pid = pid;
    r[i].stop_w = stop[1];
    int lrc = read_line(hs[0], line);
    close(hs[0]);
    if (lrc != 0 || line->len == 0) {
        tftap_buf_printf(err, "%s did not start behind the proxy", cfg->provider);
        return -1;
    }
    return 0;

fail_errno:
    tftap_buf_printf(err, "cannot start a provider: %s", strerror(errno));
    return -1;
}

/* Split a handshake line 1|PROTO|unix|ADDRESS|grpc|CERT in place; the
 * address, or NULL when it is not one of ours. */
static const char *handshake_address(tftap_buf *line, long *proto)
{
    char *fields[6] = {0};
    size_t nf = 0;
    char *text = line->data;
    if (text == NULL)
        return NULL;
    tftap_buf_cstr(line);
    text = line->data;
    /* Split in place at '|'; empty fields stay (the certificate may be). */
    while (nf < 6) {
        fields[nf++] = text;
        char *bar = strchr(text, '|');
        if (bar == NULL)
            break;
        *bar = '\0';
        text = bar + 1;
    }
    if (nf < 5 || strcmp(fields[2], "unix") != 0 || strcmp(fields[4], "grpc") != 0)
        return NULL;
    char *end = NULL;
    *proto = strtol(fields[1], &end, 10);
    if (end == NULL || *end != '\0')
        *proto = 5;
    return fields[3];
}

/* Start the proxy of r[i] for cfg (the recording options of o and run_id
 * filled in here) and read its handshake line into line: where it
 * listens (in line, which the caller frees) and its protocol. NULL with
 * err saying why (failed: what follows the provider's name when the proxy
 * answered nothing of ours); r[i] then holds what must be stopped. */
static const char *proxy_start(struct reattached *r, size_t i, proxy_config *cfg,
                               const struct launch_wrap_opts *o, int64_t run_id,
                               const char *run_dir, const char *failed, tftap_buf *line,
                               long *proto, tftap_buf *err)
{
    cfg->db = o->db;
    cfg->run_id = run_id;
    cfg->record_sensitive = o->record_sensitive;
    cfg->keep_raw = o->keep_raw;
    *proto = 5;
    if (spawn_proxy(r, i, cfg, run_dir, line, err) != 0)
        return NULL;
    const char *addr = handshake_address(line, proto);
    if (addr == NULL)
        tftap_buf_printf(err, "%.200s%s", cfg->provider, failed);
    return addr;
}

/* The TF_REATTACH_PROVIDERS value closed; on running out of memory the
 * started proxies are stopped again. 0 or TFTAP_ENOMEM. */
static int json_end(tftap_buf *json, struct reattached *r, size_t started, tftap_buf *err)
{
    tftap_buf_putc(json, '}');
    if (!tftap_buf_failed(json))
        return 0;
    tftap_buf_puts(err, "out of memory");
    reattach_stop(r, started);
    return TFTAP_ENOMEM;
}

int reattach_start(const struct launch_providers *set, const struct launch_wrap_opts *o,
                   int64_t run_id, const char *run_dir, struct reattached *r, tftap_buf *json,
                   tftap_buf *err)
{
    static char cookie[] = PLUGIN_COOKIE_KEY "=" PLUGIN_COOKIE_VALUE;
    char *add[1] = {cookie};
    char **env = run_env_with(add, 1);
    size_t started = 0;

    if (env == NULL) {
        tftap_buf_puts(err, "out of memory");
        return TFTAP_ENOMEM;
    }
    tftap_buf_putc(json, '{');
    for (size_t i = 0; i < set->n; i++) {
        const struct launch_provider *p = &set->v[i];
        proxy_config cfg;
        proxy_config_init(&cfg);
        cfg.provider = p->addr;
        cfg.version = p->version;
        cfg.binary = p->binary;
        cfg.envp = env;
        tftap_buf line = TFTAP_BUF_INIT;
        long proto;
        const char *addr = proxy_start(r, i, &cfg, o, run_id, run_dir,
                                       " did not start behind the proxy", &line, &proto, err);
        started = i + 1;
        if (addr == NULL) {
            tftap_buf_done(&line);
            goto fail;
        }
        if (i)
            tftap_buf_putc(json, ',');
        tftap_buf_json_string(json, p->addr, strlen(p->addr));
        tftap_buf_printf(json,
                         ":{\"Protocol\":\"grpc\",\"ProtocolVersion\":%ld,\"Pid\":%d,"
                         "\"Test\":true,\"Addr\":{\"Network\":\"unix\",\"String\":",
                         proto, (int)r[i].pid);
        tftap_buf_json_string(json, addr, strlen(addr));
        tftap_buf_puts(json, "}}");
        tftap_buf_done(&line);
    }
    free(env);
    return json_end(json, r, started, err);

fail:
    reattach_stop(r, started);
    free(env);
    return TFTAP_ECHILD;
}

size_t reattach_count(const char *reattach_json)
{
    sj_doc *doc = NULL;
    size_t n = 0;
    if (reattach_json == NULL || sj_parse(reattach_json, strlen(reattach_json), 0, &doc) != 0)
        return 0;
    const sj_node *root = sj_root(doc);
    if (root->kind == SJ_OBJECT)
        n = root->n;
    sj_free(doc);
    return n;
}

int reattach_attach_start(const char *reattach_json, const struct launch_wrap_opts *o,
                          int64_t run_id, const char *run_dir, struct reattached *r, size_t *nr,
                          tftap_buf *json, tftap_buf *err)
{
    sj_doc *doc = NULL;
    size_t started = 0;
    *nr = 0;
    if (sj_parse(reattach_json, strlen(reattach_json), 0, &doc) != 0 ||
        sj_root(doc)->kind != SJ_OBJECT) {
        sj_free(doc);
        tftap_buf_puts(err, "TF_REATTACH_PROVIDERS is not a JSON object");
        return TFTAP_EDECODE;
    }
    tftap_buf_putc(json, '{');
    size_t i = 0;
    for (const sj_node *e = sj_root(doc)->child; e != NULL; e = e->next, i++) {
        const sj_node *addr = sj_get(e, "Addr");
        const sj_node *net = sj_get(addr, "Network");
        const sj_node *where = sj_get(addr, "String");
        const sj_node *pv = sj_get(e, "ProtocolVersion");
        const sj_node *pid = sj_get(e, "Pid");
        if (e->kind != SJ_OBJECT || net == NULL || net->kind != SJ_STRING || where == NULL ||
            where->kind != SJ_STRING || memchr(e->key, '\0', e->key_len) ||
            memchr(where->str, '\0', where->len) ||
            (strcmp(net->str, "unix") != 0 && strcmp(net->str, "tcp") != 0)) {
            tftap_buf_printf(err, "TF_REATTACH_PROVIDERS: %.200s has no usable address", e->key);
            goto fail;
        }
        proxy_config cfg;
        proxy_config_init(&cfg);
        cfg.provider = e->key;
        cfg.attach_network = net->str;
        cfg.attach_address = where->str;
        cfg.attach_protocol = pv != NULL && pv->kind == SJ_NUMBER ? atoi(pv->str) : 5;
        cfg.attach_pid = pid != NULL && pid->kind == SJ_NUMBER ? atoi(pid->str) : 0;
        tftap_buf line = TFTAP_BUF_INIT;
        long proto;
        const char *ours = proxy_start(r, i, &cfg, o, run_id, run_dir, ": no relay in front of it",
                                       &line, &proto, err);
        started = i + 1;
        if (ours == NULL) {
            tftap_buf_done(&line);
            goto fail;
        }
        /* The entry as the harness wrote it, but for where to dial. */
        if (i)
            tftap_buf_putc(json, ',');
        tftap_buf_json_string(json, e->key, e->key_len);
        tftap_buf_puts(json, ":{");
        int first = 1;
        for (const sj_node *m = e->child; m != NULL; m = m->next) {
            if (m->key_len == 4 && memcmp(m->key, "Addr", 4) == 0)
                continue;
            if (!first)
                tftap_buf_putc(json, ',');
            first = 0;
            tftap_buf_json_string(json, m->key, m->key_len);
            tftap_buf_putc(json, ':');
            sj_write(m, json);
        }
        tftap_buf_puts(json, first ? "" : ",");
        tftap_buf_puts(json, "\"Addr\":{\"Network\":\"unix\",\"String\":");
        tftap_buf_json_string(json, ours, strlen(ours));
        tftap_buf_puts(json, "}}");
        tftap_buf_done(&line);
    }
    sj_free(doc);
    int rc = json_end(json, r, started, err);
    *nr = rc == 0 ? started : 0;
    return rc;

fail:
    sj_free(doc);
    reattach_stop(r, started);
    return TFTAP_ECHILD;
}
