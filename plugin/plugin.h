/* plugin: go-plugin's mechanics, shared by the live relay, replay and
 * anything that starts a provider binary: the magic cookie, the handshake
 * line a plugin prints, throw-away mutual-TLS certificates, TLS contexts for
 * both sides of a plugin connection, and starting a provider process.
 * Layer: may use common only (and OpenSSL).
 *
 * Ownership: structs filled by a function are released with its _done
 * counterpart; strings handed out as char * are heap, freed by the caller. */
#ifndef TFTAP_PLUGIN_H
#define TFTAP_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <openssl/ssl.h>

#include "common/common.h"

/* go-plugin's magic cookie for Terraform/OpenTofu providers. */
#define PLUGIN_COOKIE_KEY "TF_PLUGIN_MAGIC_COOKIE"
#define PLUGIN_COOKIE_VALUE "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2"

/* What a provider prints when started by hand; the shim prints the same. */
#define PLUGIN_NOT_A_PROGRAM_MESSAGE                                                               \
    "This binary is a plugin. These are not meant to be executed directly.\n"                      \
    "Please execute the program that consumes these plugins, which will\n"                         \
    "load any plugins automatically\n"

/* Bounds on what a provider may say before we trust it. */
#define PLUGIN_HANDSHAKE_MAX 16384 /* bytes in its handshake line */
/* Longer than the client waits (go-plugin gives up after a minute, then
 * kills us, and the provider with us: PR_SET_PDEATHSIG), so that a provider
 * that never finishes its handshake is the client's to report, in its own
 * words, as it would be without tftap. */
#define PLUGIN_HANDSHAKE_TIMEOUT_MS 300000

/* 1 when envp (NULL = environ) carries go-plugin's magic cookie with the
 * right value. Without it a plugin must not start. */
int plugin_cookie_ok(char *const *envp);

/* ---- cert.c: a go-plugin style self-signed certificate -------------------- */

typedef struct plugin_cert {
    char *cert_pem; /* "-----BEGIN CERTIFICATE-----..." */
    char *key_pem;  /* PKCS#8 private key */
    char *der_b64;  /* leaf DER, standard base64 without padding */
    X509 *x509;     /* the same certificate and key, parsed: TLS contexts */
    EVP_PKEY *key;  /* take them without decoding the PEM again */
} plugin_cert;

/* ECDSA P-256, CN and SAN DNS localhost, CA, keyCertSign+digitalSignature,
 * EKU server+client auth, valid ~30 years. go-plugin makes P-521 keys; its
 * peers take any curve, and P-256's signatures cost a tenth (two TLS
 * handshakes and a certificate per provider process, each on the path of
 * the CLI starting a provider). 0, TFTAP_ETLS or TFTAP_ENOMEM. */
int plugin_cert_make(plugin_cert *cert);
void plugin_cert_done(plugin_cert *cert);

/* The PEM of a certificate given as unpadded base64 of its DER (as go-plugin
 * prints it). *pem is heap, freed by the caller. 0, TFTAP_EDECODE or
 * TFTAP_ENOMEM. */
int plugin_cert_b64der_to_pem(const char *b64, size_t len, char **pem);

/* ---- handshake.c: go-plugin's stdout line ------------------------------ */

typedef struct plugin_handshake {
    int core_version;  /* always 1 */
    int proto_version; /* 5 or 6 for providers */
    char *network;     /* "unix" or "tcp" */
    char *address;
    char *protocol; /* "grpc" */
    char *cert_b64; /* may be empty: plaintext */
    char *extra;    /* fields after the cert, verbatim, or "" */
} plugin_handshake;

/* Parse one line (without its newline). 0, TFTAP_EPROTO or TFTAP_ENOMEM;
 * err receives the reason. */
int plugin_handshake_parse(const char *line, size_t len, plugin_handshake *hs, tftap_buf *err);
void plugin_handshake_done(plugin_handshake *hs);

/* Look a variable up in an environment vector. NULL when absent. */
const char *plugin_env_get(char *const *envp, const char *name);

/* A fresh unix socket path, dir/<prefix><random>, where the client asked
 * for plugin sockets to live (go-plugin's PLUGIN_UNIX_SOCKET_DIR), else
 * TMPDIR, else /tmp; nothing exists there yet. 0, TFTAP_ELIMIT (too long
 * for a socket), TFTAP_EIO, TFTAP_ENOMEM; err (may be NULL) says why. */
int plugin_socket_path(char *const *envp, const char *prefix, tftap_buf *path, tftap_buf *err);

/* A copy of envp without PLUGIN_CLIENT_CERT, plus PLUGIN_CLIENT_CERT=cert_pem
 * when cert_pem is not NULL, and with PLUGIN_UNIX_SOCKET_DIR=socket_dir
 * (in place of the caller's) when socket_dir is not NULL. The vector and
 * its strings are one allocation freed with free(). NULL on ENOMEM. */
char **plugin_env_for_child(char *const *envp, const char *cert_pem, const char *socket_dir);

/* ---- child.c: the real provider process ------------------------------- */

typedef struct plugin_child {
    pid_t pid;
    int out_fd;        /* read end of its stdout, or -1 once at EOF */
    tftap_buf pending; /* stdout bytes read past the handshake line */
} plugin_child;

/* Start binary with args and env; its stdin and stderr are ours, its
 * stdout is a pipe; it gets SIGKILL if this thread dies. 0, TFTAP_ECHILD
 * (err says why, e.g. exec failed) or TFTAP_EIO. */
int plugin_child_spawn(plugin_child *child, const char *binary, char *const *args, char **envp,
                       tftap_buf *err);

/* Read the handshake line (bounded, timeout_ms). While waiting, forwards
 * SIGINT/SIGTERM/SIGHUP arriving on sig_fd (a signalfd) to the child. *line
 * is heap; bytes after it stay in child->pending. 0, TFTAP_ECHILD (it exited
 * or closed stdout first), TFTAP_ELIMIT (too long or too slow) or TFTAP_EIO. */
int plugin_child_read_handshake(plugin_child *child, int sig_fd, int timeout_ms, char **line,
                                tftap_buf *err);

/* ---- tls.c: OpenSSL contexts for both legs ------------------------------ */

/* Our side of the client's connection: our certificate, requiring and
 * verifying the client's (client_pem, the one it announced), ALPN h2. */
int plugin_tls_server_ctx(const plugin_cert *own, const char *client_pem, SSL_CTX **out,
                          tftap_buf *err);
/* Our side of the provider's connection: our certificate as the client's,
 * trusting only server_pem (the one the provider announced). */
int plugin_tls_client_ctx(const plugin_cert *own, const char *server_pem, SSL_CTX **out,
                          tftap_buf *err);
/* One connection on fd, not yet shaken hands; the client one checks the
 * name localhost. NULL on ENOMEM. */
SSL *plugin_tls_client(SSL_CTX *ctx, int fd);
SSL *plugin_tls_server(SSL_CTX *ctx, int fd);
/* Why a handshake failed (rc from SSL_do_handshake), appended to err. */
void plugin_tls_error(SSL *ssl, int rc, tftap_buf *err);

/* Connect to a provider at addr (a unix or TCP socket; TCP_NODELAY on TCP)
 * and, with ctx, shake hands as its client (plugin_tls_client), all before
 * deadline (tftap_mono_ms). *fd (non-blocking, close-on-exec) and *ssl
 * (NULL without ctx) are the caller's. 0, TFTAP_ECHILD (it cannot be
 * reached, TLS failed or the deadline passed; err says which), TFTAP_EIO
 * (no socket) or TFTAP_ENOMEM. */
int plugin_dial(const struct sockaddr *addr, socklen_t addrlen, SSL_CTX *ctx, int64_t deadline,
                int *fd, SSL **ssl, tftap_buf *err);

/* ---- call.c: asking a provider binary directly -------------------------- */

/* What a unary call wrote (from_server 0) and read (1), byte for byte as
 * it went: a watcher recording the call (the relay's own Shutdown). */
typedef void plugin_call_seen(void *ctx, int from_server, const uint8_t *p, size_t n);

/* One unary gRPC call on a fresh HTTP/2 connection (fd, with ssl when not
 * NULL, TLS handshake done): preface, SETTINGS, the request message,
 * then frames until the call's stream ends, every byte shown to seen
 * (NULL: none). The answer's message bytes (at most max_resp) are
 * appended to resp. Returns 0, TFTAP_EPROTO (no message: an error status,
 * a reset, malformed frames; err says which), TFTAP_ELIMIT (too large or
 * timeout_ms passed), TFTAP_EIO, TFTAP_ENOMEM. The one HTTP/2 client of
 * tftap's own calls (GetProviderSchema, Shutdown). */
int plugin_unary_call(int fd, SSL *ssl, const char *path, const void *req, size_t req_len,
                      size_t max_resp, int timeout_ms, plugin_call_seen *seen, void *seen_ctx,
                      tftap_buf *resp, tftap_buf *err);

/* Start a provider binary as go-plugin's client would (cookie, protocols 5
 * and 6, mutual TLS), ask GetProviderSchema (protocol 5: GetSchema), and
 * stop it (Shutdown, then SIGKILL after 2 s). The serialized response is
 * appended to schema and its protocol stored in *protocol. Returns 0 or an
 * error with err saying why (TFTAP_ECHILD, TFTAP_EPROTO, TFTAP_ETLS,
 * TFTAP_ELIMIT, TFTAP_EIO, TFTAP_ENOMEM). */
int plugin_provider_schema(const char *binary, int timeout_ms, tftap_buf *schema, int *protocol,
                           tftap_buf *err);

#endif
