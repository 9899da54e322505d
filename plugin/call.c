/* plugin: asking a provider binary for its schema. The binary is started as
 * go-plugin's client would start it (cookie, protocol versions 5 and 6, our
 * client certificate), asked one unary gRPC call over its own HTTP/2
 * connection, then told to shut down (and killed if it does not). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "plugin/plugin.h"

extern char **environ;

/* A literal header field without indexing, new name, no Huffman: HPACK's
 * simplest form. */
static void hpack_literal(tftap_buf *b, const char *name, const char *value)
{
    tftap_buf_putc(b, 0x00);
    tftap_buf_putc(b, (char)strlen(name));
    tftap_buf_puts(b, name);
    tftap_buf_putc(b, (char)strlen(value));
    tftap_buf_puts(b, value);
}

/* A unary gRPC request's header block (literal fields, no Huffman: path
 * shorter than 127 bytes). */
static void h2_request_headers(tftap_buf *block, const char *path, int tls)
{
    hpack_literal(block, ":method", "POST");
    hpack_literal(block, ":scheme", tls ? "https" : "http");
    hpack_literal(block, ":path", path);
    hpack_literal(block, ":authority", "localhost");
    hpack_literal(block, "content-type", "application/grpc");
    hpack_literal(block, "te", "trailers");
}

/* An HTTP/2 frame header of len bytes. */
static void h2_frame(tftap_buf *b, size_t len, uint8_t type, uint8_t flags, uint32_t stream)
{
    uint8_t h[9] = {(uint8_t)(len >> 16),
                    (uint8_t)(len >> 8),
                    (uint8_t)len,
                    type,
                    flags,
                    (uint8_t)(stream >> 24),
                    (uint8_t)(stream >> 16),
                    (uint8_t)(stream >> 8),
                    (uint8_t)stream};
    tftap_buf_append(b, h, sizeof h);
}

static void put32(tftap_buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    tftap_buf_append(b, x, 4);
}

static int wait_fd(int fd, short ev, int64_t deadline)
{
    return tftap_wait_fd(fd, ev, deadline);
}

static int io_write(int fd, SSL *ssl, const void *p, size_t n, int64_t deadline)
{
    size_t off = 0;
    while (off < n) {
        if (ssl) {
            int w = SSL_write(ssl, (const char *)p + off, (int)(n - off));
            if (w > 0) {
                off += (size_t)w;
                continue;
            }
            int e = SSL_get_error(ssl, w);
            if (e != SSL_ERROR_WANT_WRITE && e != SSL_ERROR_WANT_READ)
                return TFTAP_EIO;
            if (wait_fd(fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline))
                return TFTAP_ELIMIT;
        } else {
            ssize_t w = send(fd, (const char *)p + off, n - off, MSG_NOSIGNAL);
            if (w > 0) {
                off += (size_t)w;
                continue;
            }
            if (w < 0 && errno != EAGAIN && errno != EINTR)
                return TFTAP_EIO;
            if (wait_fd(fd, POLLOUT, deadline))
                return TFTAP_ELIMIT;
        }
    }
    return 0;
}

/* Bytes read (> 0), 0 at the end of the connection, or an error. */
static ssize_t io_read(int fd, SSL *ssl, void *p, size_t n, int64_t deadline)
{
    for (;;) {
        if (ssl) {
            int r = SSL_read(ssl, p, (int)n);
            if (r > 0)
                return r;
            int e = SSL_get_error(ssl, r);
            if (e == SSL_ERROR_ZERO_RETURN)
                return 0;
            if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
                return TFTAP_EIO;
            if (wait_fd(fd, e == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN, deadline))
                return TFTAP_ELIMIT;
        } else {
            ssize_t r = recv(fd, p, n, 0);
            if (r >= 0)
                return r;
            if (errno != EAGAIN && errno != EINTR)
                return TFTAP_EIO;
            if (wait_fd(fd, POLLIN, deadline))
                return TFTAP_ELIMIT;
        }
    }
}

int plugin_unary_call(int fd, SSL *ssl, const char *path, const void *req, size_t req_len,
                      size_t max_resp, int timeout_ms, plugin_call_seen *seen, void *seen_ctx,
                      tftap_buf *resp, tftap_buf *err)
{
    int64_t deadline = tftap_mono_ms() + timeout_ms;
    tftap_buf out = TFTAP_BUF_INIT, block = TFTAP_BUF_INIT, in = TFTAP_BUF_INIT,
              data = TFTAP_BUF_INIT;
    int rc = TFTAP_EPROTO;
    h2_request_headers(&block, path, ssl != NULL);
    tftap_buf_puts(&out, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    /* SETTINGS: a stream window as large as allowed, so a schema of tens
     * of MB needs no WINDOW_UPDATE per stream; the connection's window
     * grows by a WINDOW_UPDATE right after. */
    h2_frame(&out, 6, 4, 0, 0);
    tftap_buf_putc(&out, 0);
    tftap_buf_putc(&out, 4); /* SETTINGS_INITIAL_WINDOW_SIZE */
    put32(&out, 0x7fffffffu);
    h2_frame(&out, 4, 8, 0, 0);
    put32(&out, 0x7fffffffu - 65535u);
    h2_frame(&out, block.len, 1, 0x4, 1);
    tftap_buf_append(&out, block.data, block.len);
    h2_frame(&out, 5 + req_len, 0, 0x1, 1);
    uint8_t prefix[5] = {0, (uint8_t)(req_len >> 24), (uint8_t)(req_len >> 16),
                         (uint8_t)(req_len >> 8), (uint8_t)req_len};
    tftap_buf_append(&out, prefix, 5);
    tftap_buf_append(&out, req, req_len);
    if (tftap_buf_failed(&out) || tftap_buf_failed(&block)) {
        rc = TFTAP_ENOMEM;
        goto done;
    }
    if ((rc = io_write(fd, ssl, out.data, out.len, deadline)) != 0) {
        tftap_buf_printf(err, "writing the request: %s", tftap_strerror(rc));
        goto done;
    }
    if (seen != NULL)
        seen(seen_ctx, 0, (const uint8_t *)out.data, out.len);
    /* Frames until stream 1 ends. The status travels in HPACK-coded
     * trailers we do not decode: a complete message on a stream that ended
     * is an answer, anything else is not. */
    uint8_t buf[16384];
    size_t pos = 0;
    int ended = 0;
    rc = TFTAP_EPROTO;
    while (!ended) {
        ssize_t n = io_read(fd, ssl, buf, sizeof buf, deadline);
        if (n <= 0) {
            tftap_buf_printf(err, "the provider closed the connection before answering%s%s",
                             n < 0 ? ": " : "", n < 0 ? tftap_strerror((int)n) : "");
            rc = n < 0 ? (int)n : TFTAP_EPROTO;
            goto done;
        }
        if (seen != NULL)
            seen(seen_ctx, 1, buf, (size_t)n);
        tftap_buf_append(&in, buf, (size_t)n);
        while (in.len - pos >= 9) {
            const uint8_t *h = (const uint8_t *)in.data + pos;
            size_t len = (size_t)h[0] << 16 | (size_t)h[1] << 8 | h[2];
            if (in.len - pos < 9 + len)
                break;
            uint8_t type = h[3], flags = h[4];
            uint32_t stream =
                ((uint32_t)h[5] << 24 | (uint32_t)h[6] << 16 | (uint32_t)h[7] << 8 | h[8]) &
                0x7fffffffu;
            const uint8_t *payload = h + 9;
            if (type == 4 && !(flags & 0x1)) { /* SETTINGS: acknowledge */
                tftap_buf ack = TFTAP_BUF_INIT;
                h2_frame(&ack, 0, 4, 0x1, 0);
                int w = io_write(fd, ssl, ack.data, ack.len, deadline);
                if (w == 0 && seen != NULL)
                    seen(seen_ctx, 0, (const uint8_t *)ack.data, ack.len);
                tftap_buf_done(&ack);
                if (w) {
                    rc = w;
                    goto done;
                }
            } else if (type == 0 && stream == 1) { /* DATA */
                size_t off = 0, pad = 0;
                if (flags & 0x8) {
                    if (len < 1 || (size_t)payload[0] + 1 > len)
                        goto malformed;
                    pad = payload[0];
                    off = 1;
                }
                tftap_buf_append(&data, payload + off, len - off - pad);
                if (data.len > max_resp + 5) {
                    tftap_buf_printf(err, "the answer is larger than %zu bytes", max_resp);
                    rc = TFTAP_ELIMIT;
                    goto done;
                }
                if (flags & 0x1)
                    ended = 1;
            } else if (type == 1 && stream == 1 && (flags & 0x1)) {
                ended = 1; /* trailers */
            } else if (type == 3 && stream == 1) {
                tftap_buf_puts(err, "the provider reset the call");
                goto done;
            } else if (type == 7) {
                tftap_buf_puts(err, "the provider closed the connection (GOAWAY)");
                goto done;
            }
            pos += 9 + len;
        }
        if (tftap_buf_failed(&in) || tftap_buf_failed(&data)) {
            rc = TFTAP_ENOMEM;
            goto done;
        }
        memmove(in.data, in.data + pos, in.len - pos);
        in.len -= pos;
        pos = 0;
    }
    if (data.len < 5) {
        tftap_buf_puts(err, "the provider answered with an error status and no message");
        goto done;
    }
    const uint8_t *d = (const uint8_t *)data.data;
    size_t mlen = (size_t)d[1] << 24 | (size_t)d[2] << 16 | (size_t)d[3] << 8 | d[4];
    if (d[0] != 0 || mlen != data.len - 5) {
        tftap_buf_puts(err, d[0] ? "the answer is compressed" : "the answer is not one message");
        goto done;
    }
    tftap_buf_append(resp, d + 5, mlen);
    rc = tftap_buf_failed(resp) ? TFTAP_ENOMEM : 0;
    goto done;
malformed:
    tftap_buf_puts(err, "malformed HTTP/2 frame from the provider");
    rc = TFTAP_EPROTO;
done:
    tftap_buf_done(&out);
    tftap_buf_done(&block);
    tftap_buf_done(&in);
    tftap_buf_done(&data);
    return rc;
}

/* The provider's unix socket from its handshake, dialed (plugin_dial). */
static int dial(const plugin_handshake *hs, SSL_CTX *ctx, int64_t deadline, int *fd_out,
                SSL **ssl_out, tftap_buf *err)
{
    *fd_out = -1;
    *ssl_out = NULL;
    if (strcmp(hs->network, "unix") != 0) {
        tftap_buf_printf(err, "the provider listens on %s, only unix sockets are dialed",
                         hs->network);
        return TFTAP_EPROTO;
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(hs->address) >= sizeof sa.sun_path) {
        tftap_buf_puts(err, "the provider's socket path is too long");
        return TFTAP_EPROTO;
    }
    memcpy(sa.sun_path, hs->address, strlen(hs->address) + 1);
    return plugin_dial((const struct sockaddr *)&sa, sizeof sa, ctx, deadline, fd_out, ssl_out,
                       err);
}

/* Wait for the child to exit, up to ms; then SIGKILL it. */
static void reap(pid_t pid, int ms)
{
    int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pfd >= 0) {
        struct pollfd p = {pfd, POLLIN, 0};
        int r;
        do
            r = poll(&p, 1, ms);
        while (r < 0 && errno == EINTR);
        close(pfd);
    }
    if (waitpid(pid, NULL, WNOHANG) == pid)
        return;
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

int plugin_provider_schema(const char *binary, int timeout_ms, tftap_buf *schema, int *protocol,
                           tftap_buf *err)
{
    int64_t deadline = tftap_mono_ms() + timeout_ms;
    plugin_cert own;
    memset(&own, 0, sizeof own);
    plugin_handshake hs;
    memset(&hs, 0, sizeof hs);
    plugin_child child = {.pid = -1, .out_fd = -1, .pending = TFTAP_BUF_INIT};
    char **env = NULL, *line = NULL, *server_pem = NULL;
    SSL_CTX *ctx = NULL;
    SSL *ssl = NULL;
    int fd = -1;
    int rc = plugin_cert_make(&own);
    if (rc) {
        tftap_buf_puts(err, "cannot make a client certificate");
        goto done;
    }
    /* The environment go-plugin's client gives a provider. */
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **base = calloc(n + 3, sizeof *base);
    if (!base) {
        rc = TFTAP_ENOMEM;
        goto done;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], PLUGIN_COOKIE_KEY "=", strlen(PLUGIN_COOKIE_KEY) + 1) != 0 &&
            strncmp(environ[i], "PLUGIN_PROTOCOL_VERSIONS=", 25) != 0)
            base[k++] = environ[i];
    base[k++] = PLUGIN_COOKIE_KEY "=" PLUGIN_COOKIE_VALUE;
    base[k++] = "PLUGIN_PROTOCOL_VERSIONS=5,6";
    env = plugin_env_for_child(base, own.cert_pem, NULL);
    free(base);
    if (!env) {
        rc = TFTAP_ENOMEM;
        goto done;
    }
    /* A provider logs every call on stderr (hclog JSON, filtered by the
     * client normally): the child gets /dev/null there. plugin_child_spawn
     * hands down our own stderr, so it is swapped around the spawn; callers
     * are single-threaded commands. */
    int saved = dup(STDERR_FILENO), null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (saved >= 0 && null_fd >= 0)
        dup2(null_fd, STDERR_FILENO);
    rc = plugin_child_spawn(&child, binary, NULL, env, err);
    if (saved >= 0) {
        dup2(saved, STDERR_FILENO);
        close(saved);
    }
    if (null_fd >= 0)
        close(null_fd);
    if (rc)
        goto done;
    rc = plugin_child_read_handshake(&child, -1, timeout_ms, &line, err);
    if (rc)
        goto done;
    rc = plugin_handshake_parse(line, strlen(line), &hs, err);
    if (rc)
        goto done;
    if (hs.proto_version != 5 && hs.proto_version != 6) {
        tftap_buf_printf(err, "the provider speaks plugin protocol %d, not 5 or 6",
                         hs.proto_version);
        rc = TFTAP_EPROTO;
        goto done;
    }
    if (hs.cert_b64 && strlen(hs.cert_b64) > 50) {
        rc = plugin_cert_b64der_to_pem(hs.cert_b64, strlen(hs.cert_b64), &server_pem);
        if (!rc)
            rc = plugin_tls_client_ctx(&own, server_pem, &ctx, err);
        if (rc)
            goto done;
    }
    rc = dial(&hs, ctx, deadline, &fd, &ssl, err);
    if (rc)
        goto done;
    const char *path = hs.proto_version == 5 ? "/tfplugin5.Provider/GetSchema"
                                             : "/tfplugin6.Provider/GetProviderSchema";
    rc = plugin_unary_call(fd, ssl, path, "", 0, (size_t)256 << 20,
                           (int)(deadline - tftap_mono_ms() > 0 ? deadline - tftap_mono_ms() : 1),
                           NULL, NULL, schema, err);
    if (!rc)
        *protocol = hs.proto_version;
done:
    if (ssl) {
        SSL_free(ssl);
        ssl = NULL;
    }
    if (fd >= 0)
        close(fd);
    if (child.pid > 0) {
        /* go-plugin's Shutdown on a connection of its own, then what the
         * client does: wait a moment and kill. */
        tftap_buf ignore = TFTAP_BUF_INIT, why = TFTAP_BUF_INIT;
        int sfd = -1, asked = 0;
        if (hs.network && dial(&hs, ctx, tftap_mono_ms() + 2000, &sfd, &ssl, &why) == 0) {
            (void)plugin_unary_call(sfd, ssl, "/plugin.GRPCController/Shutdown", "", 0, 1024, 2000,
                                    NULL, NULL, &ignore, &why);
            asked = 1;
            if (ssl)
                SSL_free(ssl);
            close(sfd);
        }
        tftap_buf_done(&ignore);
        tftap_buf_done(&why);
        /* One that could not be asked to stop is not waited for. */
        reap(child.pid, asked ? 2000 : 0);
    }
    if (child.out_fd >= 0)
        close(child.out_fd);
    tftap_buf_done(&child.pending);
    SSL_CTX_free(ctx);
    free(server_pem);
    free(line);
    free(env);
    plugin_handshake_done(&hs);
    plugin_cert_done(&own);
    return rc;
}
