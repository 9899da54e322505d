/* plugin: the OpenSSL contexts of both legs, set up as go-plugin sets up
 * its own: TLS 1.2 or later, ALPN "h2" (gRPC clients refuse a server that
 * does not select it), each side trusting exactly the one certificate the
 * other announced; and the one dialer of a provider (plugin_dial). */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "plugin/plugin.h"

static const unsigned char alpn_h2[] = {2, 'h', '2'};

static void put_ssl_error(tftap_buf *err, const char *what)
{
    if (err == NULL)
        return;
    unsigned long e = ERR_peek_last_error();
    char msg[256];
    ERR_error_string_n(e, msg, sizeof msg);
    tftap_buf_printf(err, "%s: %s", what, e != 0 ? msg : "failed");
    ERR_clear_error();
}

static X509 *x509_of_pem(const char *pem)
{
    BIO *bio = BIO_new_mem_buf(pem, -1);
    if (bio == NULL)
        return NULL;
    X509 *x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    BIO_free(bio);
    return x;
}

/* Our certificate and key, and the one certificate we trust. */
static int ctx_setup(SSL_CTX *ctx, const plugin_cert *own, const char *trusted_pem, tftap_buf *err)
{
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* Read-ahead: one read() takes every record the socket holds, instead
     * of two per record (header, then body). A reader must then ask
     * SSL_has_pending() before it waits for the socket (the relay does).
     * The buffers stay allocated: releasing them when empty cost a malloc
     * and a free per record, for 34 KiB per connection saved. */
    SSL_CTX_set_read_ahead(ctx, 1);
    /* Parsed already when we made it: OpenSSL 3's PEM decoders cost about
     * half a millisecond a call. */
    X509 *cert =
        own->x509 != NULL && X509_up_ref(own->x509) ? own->x509 : x509_of_pem(own->cert_pem);
    EVP_PKEY *key = NULL;
    if (own->key != NULL && EVP_PKEY_up_ref(own->key))
        key = own->key;
    else {
        BIO *kb = BIO_new_mem_buf(own->key_pem, -1);
        key = kb != NULL ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
        BIO_free(kb);
    }
    int ok = cert != NULL && key != NULL && SSL_CTX_use_certificate(ctx, cert) == 1 &&
             SSL_CTX_use_PrivateKey(ctx, key) == 1 && SSL_CTX_check_private_key(ctx) == 1;
    X509_free(cert);
    EVP_PKEY_free(key);
    if (!ok) {
        put_ssl_error(err, "our certificate");
        return TFTAP_ETLS;
    }
    X509 *peer = x509_of_pem(trusted_pem);
    if (peer == NULL || X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), peer) != 1) {
        X509_free(peer);
        put_ssl_error(err, "the peer's certificate");
        return TFTAP_ETLS;
    }
    X509_free(peer);
    return 0;
}

static int select_h2(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                     const unsigned char *in, unsigned int inlen, void *arg)
{
    (void)ssl;
    (void)arg;
    unsigned char *sel = NULL;
    if (SSL_select_next_proto(&sel, outlen, alpn_h2, sizeof alpn_h2, in, inlen) !=
        OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK; /* a client without ALPN still gets h2 */
    *out = sel;
    return SSL_TLSEXT_ERR_OK;
}

int plugin_tls_server_ctx(const plugin_cert *own, const char *client_pem, SSL_CTX **out,
                          tftap_buf *err)
{
    *out = NULL;
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) {
        put_ssl_error(err, "TLS server context");
        return TFTAP_ETLS;
    }
    int rc = ctx_setup(ctx, own, client_pem, err);
    if (rc != 0) {
        SSL_CTX_free(ctx);
        return rc;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    SSL_CTX_set_alpn_select_cb(ctx, select_h2, NULL);
    /* One connection per process and no resumption: no tickets to send. */
    SSL_CTX_set_num_tickets(ctx, 0);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    *out = ctx;
    return 0;
}

int plugin_tls_client_ctx(const plugin_cert *own, const char *server_pem, SSL_CTX **out,
                          tftap_buf *err)
{
    *out = NULL;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) {
        put_ssl_error(err, "TLS client context");
        return TFTAP_ETLS;
    }
    int rc = ctx_setup(ctx, own, server_pem, err);
    if (rc != 0) {
        SSL_CTX_free(ctx);
        return rc;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (SSL_CTX_set_alpn_protos(ctx, alpn_h2, sizeof alpn_h2) != 0) {
        SSL_CTX_free(ctx);
        put_ssl_error(err, "ALPN");
        return TFTAP_ETLS;
    }
    *out = ctx;
    return 0;
}

SSL *plugin_tls_client(SSL_CTX *ctx, int fd)
{
    SSL *ssl = SSL_new(ctx);
    if (ssl == NULL)
        return NULL;
    /* go-plugin's client names the server "localhost", and so do we. */
    if (SSL_set_fd(ssl, fd) != 1 || SSL_set_tlsext_host_name(ssl, "localhost") != 1 ||
        SSL_set1_host(ssl, "localhost") != 1) {
        SSL_free(ssl);
        return NULL;
    }
    SSL_set_connect_state(ssl);
    return ssl;
}

SSL *plugin_tls_server(SSL_CTX *ctx, int fd)
{
    SSL *ssl = SSL_new(ctx);
    if (ssl == NULL)
        return NULL;
    if (SSL_set_fd(ssl, fd) != 1) {
        SSL_free(ssl);
        return NULL;
    }
    SSL_set_accept_state(ssl);
    return ssl;
}

void plugin_tls_error(SSL *ssl, int rc, tftap_buf *err)
{
    int e = SSL_get_error(ssl, rc);
    long v = SSL_get_verify_result(ssl);
    if (v != X509_V_OK)
        tftap_buf_printf(err, "certificate check failed: %s", X509_verify_cert_error_string(v));
    else if (e == SSL_ERROR_SSL)
        put_ssl_error(err, "TLS");
    else if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN)
        tftap_buf_puts(err, "connection closed during the TLS handshake");
    else
        tftap_buf_printf(err, "TLS error %d", e);
    ERR_clear_error();
}

int plugin_dial(const struct sockaddr *addr, socklen_t addrlen, SSL_CTX *ctx, int64_t deadline,
                int *fd_out, SSL **ssl_out, tftap_buf *err)
{
    *fd_out = -1;
    *ssl_out = NULL;
    int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        tftap_buf_printf(err, "socket: %s", strerror(errno));
        return TFTAP_EIO;
    }
    if (connect(fd, addr, addrlen) != 0) {
        if (errno != EINPROGRESS && errno != EAGAIN) {
            tftap_buf_printf(err, "cannot reach the provider: %s", strerror(errno));
            close(fd);
            return TFTAP_ECHILD;
        }
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (tftap_wait_fd(fd, POLLOUT, deadline) != 0 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr != 0) {
            tftap_buf_printf(err, "cannot reach the provider: %s",
                             soerr != 0 ? strerror(soerr) : "timed out");
            close(fd);
            return TFTAP_ECHILD;
        }
    }
    if (addr->sa_family != AF_UNIX) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    SSL *ssl = NULL;
    if (ctx != NULL) {
        ssl = plugin_tls_client(ctx, fd);
        if (ssl == NULL) {
            tftap_buf_puts(err, "out of memory");
            close(fd);
            return TFTAP_ENOMEM;
        }
        for (;;) {
            int rc = SSL_do_handshake(ssl);
            if (rc == 1)
                break;
            int e = SSL_get_error(ssl, rc);
            short ev = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
            if (ev == 0 || tftap_wait_fd(fd, ev, deadline) != 0) {
                tftap_buf_puts(err, "TLS with the provider: ");
                if (ev == 0)
                    plugin_tls_error(ssl, rc, err);
                else
                    tftap_buf_puts(err, "timed out");
                SSL_free(ssl);
                close(fd);
                return TFTAP_ECHILD;
            }
        }
    }
    *fd_out = fd;
    *ssl_out = ssl;
    return 0;
}
