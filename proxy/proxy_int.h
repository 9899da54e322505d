/* proxy internals shared by the proxy's .c files; nothing outside proxy/
 * includes this. */
#ifndef TFTAP_PROXY_INT_H
#define TFTAP_PROXY_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>

#include "common/common.h"
#include "proxy/proxy.h"
#include "store/store.h"

/* Bounds on what the child may say before we trust it. */
#define PROXY_HANDSHAKE_MAX 16384        /* bytes in its handshake line */
#define PROXY_HANDSHAKE_TIMEOUT_MS 50000 /* the client itself gives up at 60 s */
#define PROXY_CONNECT_TIMEOUT_MS 10000   /* dialing the child after its handshake */
#define PROXY_DRAIN_TIMEOUT_MS 5000      /* calls left after the child exited */
#define PROXY_SHUTDOWN_CALL_MS 1000      /* our Shutdown call when the client is gone */
#define PROXY_SHUTDOWN_GRACE_MS 1000     /* Shutdown -> SIGTERM */
#define PROXY_KILL_GRACE_MS 2000         /* SIGTERM -> SIGKILL when the client is gone */
#define PROXY_TEE_MAX_BYTES ((size_t)256 << 20)

/* ---- cert.c: a go-plugin style self-signed certificate -------------------- */

typedef struct proxy_cert {
    char *cert_pem; /* "-----BEGIN CERTIFICATE-----..." */
    char *key_pem;  /* PKCS#8 private key */
    char *der_b64;  /* leaf DER, standard base64 without padding */
} proxy_cert;

/* ECDSA P-521, CN and SAN DNS localhost, CA, keyCertSign+digitalSignature,
 * EKU server+client auth, valid ~30 years. 0, TFTAP_ETLS or TFTAP_ENOMEM. */
int proxy_cert_make(proxy_cert *cert);
void proxy_cert_done(proxy_cert *cert);

/* The PEM of a certificate given as unpadded base64 of its DER (as go-plugin
 * prints it). *pem is heap, freed by the caller. 0, TFTAP_EDECODE or
 * TFTAP_ENOMEM. */
int proxy_cert_b64der_to_pem(const char *b64, size_t len, char **pem);

/* ---- handshake.c: go-plugin's stdout line ------------------------------ */

typedef struct proxy_handshake {
    int core_version;  /* always 1 */
    int proto_version; /* 5 or 6 for providers */
    char *network;     /* "unix" or "tcp" */
    char *address;
    char *protocol; /* "grpc" */
    char *cert_b64; /* may be empty: plaintext */
    char *extra;    /* fields after the cert, verbatim, or "" */
} proxy_handshake;

/* Parse one line (without its newline). 0, TFTAP_EPROTO or TFTAP_ENOMEM;
 * err receives the reason. */
int proxy_handshake_parse(const char *line, size_t len, proxy_handshake *hs, tftap_buf *err);
void proxy_handshake_done(proxy_handshake *hs);

/* Look a variable up in an environment vector. NULL when absent. */
const char *proxy_env_get(char *const *envp, const char *name);

/* A copy of envp without PLUGIN_CLIENT_CERT, plus PLUGIN_CLIENT_CERT=cert_pem
 * when cert_pem is not NULL. The vector and its strings are one allocation
 * freed with free(). NULL on ENOMEM. */
char **proxy_env_for_child(char *const *envp, const char *cert_pem);

/* ---- child.c: the real provider process ------------------------------- */

typedef struct proxy_child {
    pid_t pid;
    int out_fd;        /* read end of its stdout, or -1 once at EOF */
    tftap_buf pending; /* stdout bytes read past the handshake line */
} proxy_child;

/* Start binary with args and env; its stdin and stderr are ours, its
 * stdout is a pipe; it gets SIGKILL if this thread dies. 0, TFTAP_ECHILD
 * (err says why, e.g. exec failed) or TFTAP_EIO. */
int proxy_child_spawn(proxy_child *child, const char *binary, char *const *args, char **envp,
                      tftap_buf *err);

/* Read the handshake line (bounded, timeout_ms). While waiting, forwards
 * SIGINT/SIGTERM/SIGHUP arriving on sig_fd (a signalfd) to the child. *line
 * is heap; bytes after it stay in child->pending. 0, TFTAP_ECHILD (it exited
 * or closed stdout first), TFTAP_ELIMIT (too long or too slow) or TFTAP_EIO. */
int proxy_child_read_handshake(proxy_child *child, int sig_fd, int timeout_ms, char **line,
                               tftap_buf *err);

/* ---- recproc.c: the recorder's own process ---------------------------- */

/* One event on the pipe to the recorder process: this header, then len
 * payload bytes (method, status message, message bytes, or for PROCESS
 * "provider\0version\0binary" with a = protocol, b = pid). Both ends are
 * this program, so the header is in host byte order. */
enum proxy_rec_kind {
    PROXY_REC_PROCESS = 1,
    PROXY_REC_BEGIN = 2,
    PROXY_REC_MESSAGE = 3, /* a = enum store_direction */
    PROXY_REC_END = 4,     /* a = status code */
};

struct proxy_rec_frame {
    uint32_t kind;
    int32_t a;
    int32_t b;
    uint32_t len;
    uint64_t call_id;
    int64_t t_us;
};

typedef struct proxy_recproc {
    pid_t pid; /* the intermediate process (already reaped), for the record */
    int fd;    /* write end of the event pipe */
} proxy_recproc;

/* Fork the recorder process (call before any thread exists): it opens db
 * with opts, applies events from the pipe and, at EOF, flushes, closes and
 * exits. 0 or TFTAP_EIO. */
int proxy_recproc_start(const char *db, const store_recorder_opts *opts, proxy_recproc *rp,
                        tftap_buf *err);
/* Close our end; the recorder process finishes on its own. */
void proxy_recproc_detach(proxy_recproc *rp);

/* ---- tee.c: copies of messages to the recorder, off the relay's thread -- */

typedef struct proxy_tee proxy_tee;

/* fd is the recorder pipe; fd < 0: *out is NULL and every tee call is a
 * no-op. The tee does not close fd. */
int proxy_tee_new(int fd, size_t max_bytes, proxy_tee **out);
void proxy_tee_process(proxy_tee *t, const char *provider, const char *version, const char *binary,
                       int protocol_version, int pid);
void proxy_tee_begin(proxy_tee *t, uint64_t call_id, const char *method, int64_t t_us);
/* Takes a reference-counted copy of bb; bb stays the caller's. */
void proxy_tee_message(proxy_tee *t, uint64_t call_id, enum store_direction dir, int64_t t_us,
                       grpc_byte_buffer *bb);
void proxy_tee_end(proxy_tee *t, uint64_t call_id, int64_t t_us, int status, const char *message);
/* Write out everything queued, stop the thread. Accepts NULL. */
void proxy_tee_free(proxy_tee *t);
/* Events dropped because the queue was full or the pipe broke. */
uint64_t proxy_tee_dropped(const proxy_tee *t);

/* ---- relay.c: the gRPC relay ------------------------------------------ */

typedef struct proxy_relay proxy_relay;

typedef struct proxy_relay_opts {
    const char *listen_addr;                 /* "unix:/path" */
    grpc_server_credentials *server_creds;   /* borrowed */
    const char *upstream_target;             /* "unix:/path" or "127.0.0.1:port" */
    grpc_channel_credentials *channel_creds; /* borrowed */
    int tls_upstream;                        /* 1: override the TLS name to localhost */
    proxy_tee *tee;                          /* may be NULL */
    int notify_fd;                           /* eventfd written when draining and idle */
} proxy_relay_opts;

/* Create the server (bound and started) and the channel; wait up to
 * connect_timeout_ms for the channel to the child to be ready; then start the
 * completion-queue thread. Needs grpc_init(). 0, TFTAP_EIO (bind failed),
 * TFTAP_ECHILD (child unreachable) or TFTAP_ENOMEM. */
int proxy_relay_start(const proxy_relay_opts *opts, int connect_timeout_ms, proxy_relay **out,
                      tftap_buf *err);
/* Ask the provider to exit as go-plugin's client does when it is done:
 * a /plugin.GRPCController/Shutdown call, which makes a go-plugin server
 * stop (removing its socket) and the provider return from main. Blocks
 * the calling thread at most timeout_ms. 0 when the provider answered OK;
 * TFTAP_ECHILD otherwise (it may still be on its way out: an answer can be
 * lost with the connection the server closes), TFTAP_ENOMEM. */
int proxy_relay_shutdown_provider(proxy_relay *r, int timeout_ms);
/* From now on, write notify_fd whenever no call is in flight. */
void proxy_relay_drain(proxy_relay *r);
/* Calls in flight right now. */
int proxy_relay_active(proxy_relay *r);
/* Shut the server down (cancelling what is left), stop the thread, free
 * everything. Accepts NULL. */
void proxy_relay_stop(proxy_relay *r);

/* Turn off what costs the relay without serving it in the gRPC build at
 * hand (abseil's debug-build mutex deadlock detection). Call before
 * grpc_init(); harmless where there is nothing to turn off. */
void proxy_relay_tune_abseil(void);

/* Microseconds since the Unix epoch. */
int64_t proxy_now_us(void);

#endif
