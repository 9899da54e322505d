/* proxy: one proxied provider from start to exit. The calling thread starts
 * the child, does both handshakes, then watches signals, the child's stdout
 * and the client's end of ours; the relay and the tee run on threads of
 * their own. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proxy/proxy_int.h"

void proxy_config_init(proxy_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->out_fd = STDOUT_FILENO;
    cfg->watch_out_fd = 1;
    cfg->stop_fd = -1;
    cfg->recorder_hold_fd = -1;
}

void proxy_config_from_meta(proxy_config *cfg, const proxy_meta *meta)
{
    proxy_config_init(cfg);
    cfg->provider = meta->provider;
    cfg->version = meta->version;
    cfg->binary = meta->binary;
    cfg->db = meta->db;
    cfg->record_sensitive = meta->record_sensitive;
    cfg->keep_raw = meta->keep_raw;
}

static void warn(const proxy_config *cfg, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void warn(const proxy_config *cfg, const char *fmt, ...)
{
    if (cfg->warn == NULL)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    cfg->warn(cfg->warn_ctx, line);
}

/* go-plugin lets the client name a group that may use the socket. */
static void apply_socket_group(const proxy_config *cfg, char *const *envp, const char *path)
{
    const char *group = plugin_env_get(envp, "PLUGIN_UNIX_SOCKET_GROUP");
    if (group == NULL || group[0] == '\0')
        return;
    char *end = NULL;
    errno = 0;
    unsigned long gid = strtoul(group, &end, 10);
    if (errno != 0 || end == group || *end != '\0') {
        struct group *g = getgrnam(group);
        if (g == NULL) {
            warn(cfg, "unknown PLUGIN_UNIX_SOCKET_GROUP %s", group);
            return;
        }
        gid = g->gr_gid;
    }
    if (chown(path, (uid_t)-1, (gid_t)gid) != 0 || chmod(path, 0660) != 0)
        warn(cfg, "cannot hand the plugin socket to its group: %s", strerror(errno));
}

static int exit_code_of(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 1;
}

struct run {
    const proxy_config *cfg;
    char *const *envp;
    plugin_child child;
    int child_reaped;
    int child_status;
    int sig_fd;
    int notify_fd;
    proxy_relay *relay; /* once started */
    int client_gone;
    int64_t term_at;     /* SIGTERM the child at this time (0: not armed) */
    int64_t kill_at;     /* SIGKILL the child at this time (0: not armed) */
    int64_t drain_until; /* give up on leftover calls at this time */
};

static void reap(struct run *run)
{
    if (run->child_reaped || run->child.pid <= 0)
        return;
    int st;
    pid_t p;
    do
        p = waitpid(run->child.pid, &st, WNOHANG);
    while (p < 0 && errno == EINTR);
    if (p == run->child.pid) {
        run->child_reaped = 1;
        run->child_status = st;
    }
}

static void client_gone(struct run *run)
{
    if (run->client_gone)
        return;
    run->client_gone = 1;
    if (run->child_reaped)
        return;
    /* Nobody is left to send Shutdown: send it ourselves, as go-plugin's
     * client would. A Go provider stopped that way closes its listener
     * (removing its socket) and returns from main; a signal kills it where
     * it stands. So signals only follow when it does not exit by itself. */
    reap(run);
    if (run->child_reaped)
        return;
    if (run->relay != NULL) {
        (void)proxy_relay_shutdown_provider(run->relay, PROXY_SHUTDOWN_CALL_MS);
        run->term_at = tftap_mono_ms() + PROXY_SHUTDOWN_GRACE_MS;
        run->kill_at = run->term_at + PROXY_KILL_GRACE_MS;
    } else {
        kill(run->child.pid, SIGTERM);
        run->kill_at = tftap_mono_ms() + PROXY_KILL_GRACE_MS;
    }
}

/* The provider did not start: the recorder is told why (err's words, and
 * the line it printed instead of a handshake), and everything is handed
 * over before we go on (the client may kill us as soon as it hears). */
static void start_failed(recorder_tee **tee, const tftap_buf *err, const char *line)
{
    tftap_buf why = TFTAP_BUF_INIT;
    if (err != NULL && err->len > 0)
        tftap_buf_append(&why, err->data, err->len);
    else
        tftap_buf_puts(&why, "it did not start");
    if (line != NULL)
        tftap_buf_printf(&why, " (it printed: %.200s)", line);
    recorder_tee_start_failed(*tee, tftap_buf_cstr(&why));
    tftap_buf_done(&why);
    recorder_tee_free(*tee);
    *tee = NULL;
}

/* The recorder process went away before the end (killed, crashed): its
 * pipe broke. We outlived it, so the gap is ours to write: what the relay
 * saw against what the record holds. */
static void recorder_died(const proxy_config *cfg, const struct run *run,
                          const struct recorder_tee_outcome *o)
{
    const char *who = cfg->provider != NULL ? cfg->provider : cfg->binary;
    int64_t lost = 0;
    if (cfg->db == NULL || cfg->run_id <= 0)
        return;
    const char *reason = o->ledger_short
                             ? "recorder died (its process ended before writing these calls; "
                               "more calls than the shim could follow: at least this many)"
                             : "recorder died (its process ended before writing these calls)";
    int rc = store_record_recorder_loss(cfg->db, cfg->run_id, (int)run->child.pid, cfg->provider,
                                        o->ledger, o->ncalls, reason, &lost);
    if (rc != 0)
        warn(cfg, "%s: the recorder died and its gap could not be written: %s", who,
             tftap_strerror(rc));
    else if (lost > 0)
        warn(cfg, "%s: the recorder died: %lld calls not recorded (a gap row says so)", who,
             (long long)lost);
}

/* Fork the recorder's process for cfg (nothing without a database); a
 * recorder that cannot start is a warning: the relay goes on unrecorded. */
static void start_recorder(const proxy_config *cfg, recorder_proc *rec)
{
    if (cfg->db == NULL)
        return;
    recorder_opts ropts;
    memset(&ropts, 0, sizeof ropts);
    ropts.run_id = cfg->run_id;
    ropts.record_sensitive = cfg->record_sensitive;
    ropts.keep_raw = cfg->keep_raw;
    tftap_buf why = TFTAP_BUF_INIT;
    rec->provider = cfg->provider;
    rec->hold_fd = cfg->recorder_hold_fd;
    rec->leave_run = cfg->leave_run;
    rec->run_left = cfg->run_left;
    rec->otlp = cfg->otlp;
    rec->version = cfg->version;
    if (recorder_proc_start(cfg->db, &ropts, rec, &why) != 0)
        warn(cfg, "cannot start the recorder (%s): relaying without recording",
             tftap_buf_cstr(&why));
    tftap_buf_done(&why);
}

/* The tee to rec's recorder (none without one), spilling big messages
 * beside the database. 0 or TFTAP_ENOMEM. */
static int tee_start(const proxy_config *cfg, const recorder_proc *rec, recorder_tee **tee)
{
    int rc = recorder_tee_new(rec->fd, RECORDER_TEE_MAX_BYTES, tee);
    if (rc == 0 && *tee != NULL && cfg->db != NULL) {
        char *dir = recorder_spill_dir(cfg->db);
        recorder_tee_spill_to(*tee, dir);
        free(dir);
    }
    return rc;
}

/* Hand the tee's copies to the recorder and let it go (it flushes on its
 * own); a recorder that died is ours to record as a gap. */
static void finish_recording(const proxy_config *cfg, struct run *run, recorder_tee *tee,
                             recorder_proc *rec)
{
    struct recorder_tee_outcome tee_end;
    recorder_tee_finish(tee, &tee_end);
    if (tee_end.pipe_broke)
        recorder_died(cfg, run, &tee_end);
    else if (tee_end.dropped > 0)
        warn(cfg, "%s: some messages were not recorded (the record's gaps say why)",
             cfg->provider != NULL ? cfg->provider : cfg->binary);
    free(tee_end.ledger);
    /* A recorder that never started never leaves the run it joined: we do,
     * or `tftap runs` would call it running for ever. */
    if (rec->fd < 0 && cfg->db != NULL && cfg->leave_run && cfg->run_id > 0)
        recorder_proc_leave_run(cfg->db, cfg->run_id);
    recorder_proc_detach(rec);
}

/* A provider killed by a signal leaves its unix socket behind. Once it has
 * been reaped nothing listens there any more: remove the path it announced,
 * but only if that is (still) a socket. */
static void remove_child_socket(const struct run *run, const plugin_handshake *hs)
{
    if (!run->child_reaped || hs->network == NULL || strcmp(hs->network, "unix") != 0 ||
        hs->address == NULL || hs->address[0] == '\0')
        return;
    struct stat st;
    if (lstat(hs->address, &st) == 0 && S_ISSOCK(st.st_mode))
        unlink(hs->address);
}

/* 1 when envp sets name to "1". */
static int env_flag(char *const *envp, const char *name)
{
    const char *v = plugin_env_get(envp, name);
    return v != NULL && strcmp(v, "1") == 0;
}

/* A fresh directory only this user can enter, in the client's TMPDIR (else
 * /tmp), for the provider's socket; NULL if none could be made. */
static char *private_dir(char *const *envp)
{
    const char *tmp = plugin_env_get(envp, "TMPDIR");
    tftap_buf p = TFTAP_BUF_INIT;
    tftap_buf_printf(&p, "%s/tftap-provider-XXXXXX", tmp != NULL && tmp[0] == '/' ? tmp : "/tmp");
    char *dir = tftap_buf_failed(&p) ? NULL : tftap_buf_take(&p, NULL);
    tftap_buf_done(&p);
    if (dir != NULL && mkdtemp(dir) == NULL) {
        free(dir);
        dir = NULL;
    }
    return dir;
}

/* The provider's directory once it has ended: what go-plugin made there
 * (its socket, left behind when the provider was killed), then itself. */
static int remove_dir_of_sockets(const char *path)
{
    DIR *d = opendir(path);
    if (d == NULL)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            (void)unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
    return rmdir(path);
}

/* Pass the child's later stdout on unchanged. */
static void pump_child_stdout(struct run *run)
{
    char chunk[4096]; /* PIPE_BUF: a write POLLOUT allows does not block */
    ssize_t n = read(run->child.out_fd, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        close(run->child.out_fd);
        run->child.out_fd = -1;
        return;
    }
    if (run->client_gone)
        return;
    /* go-plugin's client only logs these lines, but it must read them or
     * a blocked write would stall this loop (signals, the child's exit):
     * a reader that does not take them within 100 ms loses them. */
    struct pollfd out = {run->cfg->out_fd, POLLOUT, 0};
    if (poll(&out, 1, 100) != 1 || !(out.revents & POLLOUT)) {
        if ((out.revents & (POLLERR | POLLHUP)) && run->cfg->watch_out_fd)
            client_gone(run);
        return;
    }
    if (tftap_write_all(run->cfg->out_fd, chunk, (size_t)n) != 0 && errno == EPIPE &&
        run->cfg->watch_out_fd)
        client_gone(run);
}

/* The watch loop: returns when the child is gone and the calls are done,
 * or when leftovers ran out of time. */
static void watch(struct run *run, proxy_relay *relay)
{
    const proxy_config *cfg = run->cfg;
    int watch_out = cfg->watch_out_fd && cfg->out_fd >= 0;
    int watch_stop = cfg->stop_fd >= 0;

    /* A SIGCHLD read while waiting for the handshake is gone from the
     * signalfd; look once rather than wait for one that already came. */
    reap(run);
    if (run->child_reaped) {
        run->drain_until = tftap_mono_ms() + PROXY_DRAIN_TIMEOUT_MS;
        proxy_relay_drain(relay);
    }

    for (;;) {
        if (run->child_reaped && proxy_relay_active(relay) == 0)
            return;
        int64_t now = tftap_mono_ms();
        if (run->term_at != 0 && now >= run->term_at) {
            if (!run->child_reaped)
                kill(run->child.pid, SIGTERM);
            run->term_at = 0;
        }
        if (run->kill_at != 0 && now >= run->kill_at) {
            if (!run->child_reaped)
                kill(run->child.pid, SIGKILL);
            run->kill_at = 0;
        }
        if (run->drain_until != 0 && now >= run->drain_until)
            return;

        struct pollfd pfd[5];
        int idx_sig, idx_out = -1, idx_watch = -1, idx_stop = -1, idx_notify;
        nfds_t n = 0;
        pfd[idx_sig = (int)n++] = (struct pollfd){run->sig_fd, POLLIN, 0};
        pfd[idx_notify = (int)n++] = (struct pollfd){run->notify_fd, POLLIN, 0};
        if (run->child.out_fd >= 0)
            pfd[idx_out = (int)n++] = (struct pollfd){run->child.out_fd, POLLIN, 0};
        /* No events asked: a pipe whose reader closed reports POLLERR, a
         * socket POLLHUP. That is how we learn the client died. */
        if (watch_out && !run->client_gone)
            pfd[idx_watch = (int)n++] = (struct pollfd){cfg->out_fd, 0, 0};
        if (watch_stop && !run->client_gone)
            pfd[idx_stop = (int)n++] = (struct pollfd){cfg->stop_fd, POLLIN, 0};

        int timeout = -1;
        if (run->kill_at != 0)
            timeout = (int)(run->kill_at - now);
        if (run->term_at != 0 && (timeout < 0 || run->term_at - now < timeout))
            timeout = (int)(run->term_at - now);
        if (run->drain_until != 0 && (timeout < 0 || run->drain_until - now < timeout))
            timeout = (int)(run->drain_until - now);
        if (timeout < 0 && (run->kill_at != 0 || run->term_at != 0 || run->drain_until != 0))
            timeout = 0;

        int pr = poll(pfd, n, timeout);
        if (pr < 0 && errno != EINTR)
            return;
        if (pr <= 0)
            continue;

        if (pfd[idx_sig].revents & POLLIN) {
            struct signalfd_siginfo si;
            while (read(run->sig_fd, &si, sizeof si) == (ssize_t)sizeof si) {
                int sig = (int)si.ssi_signo;
                if (sig == SIGCHLD) {
                    reap(run);
                } else if (!run->child_reaped) {
                    /* Providers ignore SIGINT themselves (go-plugin eats it);
                     * whatever they do with it, it is theirs to decide. */
                    kill(run->child.pid, sig);
                }
            }
            if (run->child_reaped && run->drain_until == 0) {
                run->drain_until = tftap_mono_ms() + PROXY_DRAIN_TIMEOUT_MS;
                proxy_relay_drain(relay);
            }
        }
        if (pfd[idx_notify].revents & POLLIN) {
            uint64_t v;
            ssize_t r = read(run->notify_fd, &v, sizeof v);
            (void)r;
        }
        if (idx_out >= 0 && (pfd[idx_out].revents & (POLLIN | POLLHUP | POLLERR)))
            pump_child_stdout(run);
        if (idx_watch >= 0 && (pfd[idx_watch].revents & (POLLERR | POLLHUP)))
            client_gone(run);
        if (idx_stop >= 0 && (pfd[idx_stop].revents & (POLLIN | POLLHUP | POLLERR)))
            client_gone(run);
    }
}

int proxy_run(const proxy_config *cfg, tftap_buf *err)
{
    struct run run;
    plugin_cert cert = {0};
    plugin_handshake hs = {0};
    char **child_env = NULL;
    char *line = NULL, *child_cert_pem = NULL, *provider_dir = NULL;
    tftap_buf sock = TFTAP_BUF_INIT, out = TFTAP_BUF_INIT;
    sigset_t mask, old_mask;
    struct sigaction ign, old_pipe;
    recorder_proc rec = {.pid = -1, .fd = -1, .hold_fd = -1};
    recorder_tee *tee = NULL;
    proxy_relay *relay = NULL;
    SSL_CTX *server_tls = NULL, *client_tls = NULL;
    int socket_made = 0;
    int code = 1;

    memset(&run, 0, sizeof run);
    run.cfg = cfg;
    run.envp = cfg->envp;
    run.child.pid = -1;
    run.child.out_fd = -1;
    run.sig_fd = -1;
    run.notify_fd = -1;

    if (cfg->binary == NULL || cfg->binary[0] == '\0') {
        if (err)
            tftap_buf_puts(err, "no provider binary given");
        return 1;
    }

    /* Signals are taken before any thread exists (gRPC's, the recorder's,
     * ours), so every thread inherits the block and only the signalfd sees
     * them. */
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &mask, &old_mask);
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, &old_pipe);
    run.sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    run.notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (run.sig_fd < 0 || run.notify_fd < 0) {
        if (err)
            tftap_buf_printf(err, "signalfd/eventfd: %s", strerror(errno));
        goto cleanup;
    }

    /* The recorder's process is forked first, while this is the only
     * thread and before the provider exists. */
    start_recorder(cfg, &rec);

    /* The client's certificate, if any, is what we must require on our
     * side; the child gets ours instead (we hold no key for the client's). */
    const char *client_cert = plugin_env_get(run.envp, "PLUGIN_CLIENT_CERT");
    if (client_cert != NULL && client_cert[0] == '\0')
        client_cert = NULL;
    /* The provider's leg is plaintext, its socket in a directory only we
     * (this user) can enter: what the client's mutual TLS guards against,
     * another user on the machine dialing the socket, the directory's mode
     * guards against too, without a TLS session on every relayed call
     * (TFTAP_PROVIDER_TLS=1 keeps TLS on that leg, as before). */
    if (client_cert != NULL && !env_flag(run.envp, "TFTAP_PROVIDER_TLS"))
        provider_dir = private_dir(run.envp);
    /* Our certificate goes into the child's environment only when its leg
     * is TLS too; otherwise it is made while the provider starts. */
    int child_gets_cert = client_cert != NULL && provider_dir == NULL;
    if (child_gets_cert && plugin_cert_make(&cert) != 0) {
        if (err)
            tftap_buf_puts(err, "cannot make a TLS certificate");
        goto cleanup;
    }
    child_env =
        plugin_env_for_child(run.envp, child_gets_cert ? cert.cert_pem : NULL, provider_dir);
    if (child_env == NULL) {
        if (err)
            tftap_buf_puts(err, "out of memory");
        goto cleanup;
    }

    /* Fork before any thread of ours starts. */
    int spawned = plugin_child_spawn(&run.child, cfg->binary, cfg->args, child_env, err) == 0;
    /* The recorder hears of the process at once, named, so that a provider
     * that fails to start is one in the record too, with why (and the
     * tee's goodbye tells the recorder that we ended on purpose). */
    if (tee_start(cfg, &rec, &tee) != 0) {
        if (err)
            tftap_buf_puts(err, "out of memory");
        goto cleanup;
    }
    recorder_tee_process(tee, cfg->provider != NULL ? cfg->provider : "", cfg->version, cfg->binary,
                         0, spawned ? (int)run.child.pid : 0);
    if (!spawned) {
        start_failed(&tee, err, NULL);
        goto cleanup;
    }
    /* A key pair and a TLS context cost a few ms of CPU (more under load):
     * made while a Go provider starts (tens of ms), they are off the path
     * the client waits on at every provider start, three times per plan. */
    if (client_cert != NULL && !child_gets_cert && plugin_cert_make(&cert) != 0) {
        if (err)
            tftap_buf_puts(err, "cannot make a TLS certificate");
        goto cleanup;
    }
    if (client_cert != NULL && plugin_tls_server_ctx(&cert, client_cert, &server_tls, err) != 0)
        goto cleanup;
    if (plugin_child_read_handshake(&run.child, run.sig_fd, PLUGIN_HANDSHAKE_TIMEOUT_MS, &line,
                                    err) != 0) {
        start_failed(&tee, err, NULL);
        goto cleanup;
    }
    if (plugin_handshake_parse(line, strlen(line), &hs, err) != 0) {
        /* Not a handshake: the client gets the line the provider printed,
         * as it would without us (go-plugin shows it in its error), and
         * kills us then: the record hears of it first. */
        start_failed(&tee, err, line);
        size_t n = strlen(line);
        if (n > 0 && write(cfg->out_fd, line, n) == (ssize_t)n &&
            write(cfg->out_fd, "\n", 1) != 1) {
            /* the client has gone: nothing more to tell it */
        }
        goto cleanup;
    }

    if (hs.cert_b64[0] != '\0') {
        if (plugin_cert_b64der_to_pem(hs.cert_b64, strlen(hs.cert_b64), &child_cert_pem) != 0) {
            if (err)
                tftap_buf_puts(err, "provider handshake carries an unreadable certificate");
            goto cleanup;
        }
        /* A provider with TLS of its own wants a client certificate even
         * when our client sent none. */
        if (cert.cert_pem == NULL && plugin_cert_make(&cert) != 0) {
            if (err)
                tftap_buf_puts(err, "cannot make a TLS certificate");
            goto cleanup;
        }
    }

    /* Now with the protocol the handshake names. */
    recorder_tee_process(tee, cfg->provider != NULL ? cfg->provider : "", cfg->version, cfg->binary,
                         hs.proto_version, (int)run.child.pid);

    if (plugin_socket_path(run.envp, "tftap-plugin", &sock, err) != 0)
        goto cleanup;
    if (child_cert_pem != NULL &&
        plugin_tls_client_ctx(&cert, child_cert_pem, &client_tls, err) != 0)
        goto cleanup;

    proxy_relay_opts ro = {
        .listen_path = tftap_buf_cstr(&sock),
        .server_tls = server_tls,
        .upstream_network = hs.network,
        .upstream_address = hs.address,
        .client_tls = client_tls,
        .tee = tee,
        .notify_fd = run.notify_fd,
    };
    socket_made = 1; /* from here on the path may exist: always unlink it */
    if (proxy_relay_start(&ro, PROXY_CONNECT_TIMEOUT_MS, &relay, err) != 0)
        goto cleanup;
    run.relay = relay;
    apply_socket_group(cfg, run.envp, tftap_buf_cstr(&sock));

    /* Our handshake: the version the child negotiated, our address and our
     * certificate; any fields after the certificate pass through. */
    tftap_buf_printf(&out, "1|%d|unix|%s|grpc|%s", hs.proto_version, tftap_buf_cstr(&sock),
                     client_cert != NULL ? cert.der_b64 : "");
    if (hs.extra[0] != '\0') {
        tftap_buf_putc(&out, '|');
        tftap_buf_puts(&out, hs.extra);
    }
    tftap_buf_putc(&out, '\n');
    tftap_buf_append(&out, run.child.pending.data, run.child.pending.len);
    if (tftap_buf_failed(&out)) {
        if (err)
            tftap_buf_puts(err, "out of memory");
        goto cleanup;
    }
    if (tftap_write_all(cfg->out_fd, out.data, out.len) != 0) {
        /* The client went away before hearing from us. */
        client_gone(&run);
    }

    watch(&run, relay);
    if (!run.child_reaped)
        code = 1;
    else
        code = exit_code_of(run.child_status);

cleanup:
    /* Order matters: stop the relay (no more copies), hand the copies to the
     * recorder process, then close its pipe: it flushes after we are gone. */
    proxy_relay_stop(relay);
    run.relay = NULL;
    finish_recording(cfg, &run, tee, &rec);
    if (socket_made)
        unlink(tftap_buf_cstr(&sock));
    SSL_CTX_free(server_tls);
    SSL_CTX_free(client_tls);

    if (run.child.pid > 0 && !run.child_reaped) {
        /* We are leaving before the child did: do not leave it behind. */
        kill(run.child.pid, SIGKILL);
        int st;
        while (waitpid(run.child.pid, &st, 0) < 0 && errno == EINTR)
            ;
        run.child_reaped = 1;
    }
    remove_child_socket(&run, &hs);
    if (provider_dir != NULL && (!run.child_reaped || remove_dir_of_sockets(provider_dir) != 0))
        warn(cfg, "could not remove %s: %s", provider_dir,
             run.child_reaped ? strerror(errno) : "the provider may still run");
    free(provider_dir);
    if (run.child.out_fd >= 0)
        close(run.child.out_fd);
    tftap_buf_done(&run.child.pending);
    if (run.sig_fd >= 0)
        close(run.sig_fd);
    if (run.notify_fd >= 0)
        close(run.notify_fd);
    sigaction(SIGPIPE, &old_pipe, NULL);
    {
        /* Drop what arrived for us while blocked (a SIGCHLD from our own
         * child) rather than deliver it to the caller's old handlers. */
        struct timespec zero = {0, 0};
        sigset_t chld;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        while (sigtimedwait(&chld, NULL, &zero) > 0)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);

    plugin_handshake_done(&hs);
    plugin_cert_done(&cert);
    free(child_cert_pem);
    free(line);
    free(child_env);
    tftap_buf_done(&sock);
    tftap_buf_done(&out);
    return code;
}

int proxy_attach(const proxy_config *cfg, tftap_buf *err)
{
    struct run run;
    recorder_proc rec = {.pid = -1, .fd = -1, .hold_fd = -1};
    recorder_tee *tee = NULL;
    proxy_relay *relay = NULL;
    tftap_buf sock = TFTAP_BUF_INIT, out = TFTAP_BUF_INIT;
    sigset_t mask, old_mask;
    struct sigaction ign, old_pipe;
    int socket_made = 0, code = 1;
    const char *who = cfg->provider != NULL ? cfg->provider : "";

    memset(&run, 0, sizeof run);
    run.cfg = cfg;
    run.child.pid = cfg->attach_pid;
    run.child.out_fd = -1;
    run.notify_fd = -1;
    if (cfg->attach_address == NULL || cfg->attach_address[0] == '\0' ||
        cfg->attach_network == NULL) {
        if (err)
            tftap_buf_puts(err, "no provider address to attach to");
        return 1;
    }
    /* The relay's threads inherit the block: a signal to the group (the
     * terminal's Ctrl-C) is the CLI's and the provider's business, not
     * ours; the caller stops us through stop_fd. */
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &mask, &old_mask);
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, &old_pipe);
    run.notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (run.notify_fd < 0) {
        if (err)
            tftap_buf_printf(err, "eventfd: %s", strerror(errno));
        goto cleanup;
    }
    start_recorder(cfg, &rec);
    if (tee_start(cfg, &rec, &tee) != 0) {
        if (err)
            tftap_buf_puts(err, "out of memory");
        goto cleanup;
    }
    recorder_tee_process(tee, who, cfg->version, cfg->binary, cfg->attach_protocol,
                         cfg->attach_pid);
    if (plugin_socket_path(cfg->envp, "tftap-plugin", &sock, err) != 0)
        goto cleanup;
    proxy_relay_opts ro = {
        .listen_path = tftap_buf_cstr(&sock),
        .upstream_network = cfg->attach_network,
        .upstream_address = cfg->attach_address,
        .tee = tee,
        .notify_fd = run.notify_fd,
    };
    socket_made = 1;
    if (proxy_relay_start(&ro, PROXY_CONNECT_TIMEOUT_MS, &relay, err) != 0) {
        start_failed(&tee, err, NULL);
        goto cleanup;
    }
    apply_socket_group(cfg, cfg->envp, tftap_buf_cstr(&sock));
    tftap_buf_printf(&out, "1|%d|unix|%s|grpc|\n", cfg->attach_protocol, tftap_buf_cstr(&sock));
    if (tftap_buf_failed(&out) || tftap_write_all(cfg->out_fd, out.data, out.len) != 0) {
        if (err)
            tftap_buf_puts(err, "cannot hand over our address");
        goto cleanup;
    }

    /* Until we are told to stop (or the reader of out_fd is gone)... */
    for (;;) {
        struct pollfd pfd[2];
        nfds_t n = 0;
        if (cfg->stop_fd >= 0)
            pfd[n++] = (struct pollfd){cfg->stop_fd, POLLIN, 0};
        if (cfg->watch_out_fd && cfg->out_fd >= 0)
            pfd[n++] = (struct pollfd){cfg->out_fd, 0, 0};
        if (n == 0)
            break;
        int pr = poll(pfd, n, -1);
        if (pr < 0 && errno != EINTR)
            break;
        int done = 0;
        for (nfds_t i = 0; pr > 0 && i < n; i++)
            if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
                done = 1;
        if (done)
            break;
    }
    /* ...then the calls in flight end as the CLI left them. */
    proxy_relay_drain(relay);
    int64_t until = tftap_mono_ms() + PROXY_DRAIN_TIMEOUT_MS;
    while (proxy_relay_active(relay) > 0) {
        int64_t left = until - tftap_mono_ms();
        if (left <= 0)
            break;
        struct pollfd p = {run.notify_fd, POLLIN, 0};
        if (poll(&p, 1, (int)left) > 0) {
            uint64_t v;
            ssize_t r = read(run.notify_fd, &v, sizeof v);
            (void)r;
        }
    }
    code = 0;

cleanup:
    proxy_relay_stop(relay);
    if (tee != NULL)
        finish_recording(cfg, &run, tee, &rec);
    else
        recorder_proc_detach(&rec);
    if (socket_made)
        unlink(tftap_buf_cstr(&sock));
    if (run.notify_fd >= 0)
        close(run.notify_fd);
    sigaction(SIGPIPE, &old_pipe, NULL);
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    tftap_buf_done(&sock);
    tftap_buf_done(&out);
    return code;
}
