/* proxy internals shared by the proxy's .c files; nothing outside proxy/
 * includes this. */
#ifndef TFTAP_PROXY_INT_H
#define TFTAP_PROXY_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <stdatomic.h>

#include <openssl/ssl.h>

#include "common/common.h"
#include "decoder/decoder.h"
#include "plugin/plugin.h"
#include "proxy/proxy.h"
#include "recorder/recorder.h"
#include "store/store.h"

/* Bounds on what the child may say before we trust it. */
#define PROXY_CONNECT_TIMEOUT_MS 10000 /* dialing the child after its handshake */
#define PROXY_DRAIN_TIMEOUT_MS 5000    /* calls left after the child exited */
#define PROXY_SHUTDOWN_CALL_MS 1000    /* our Shutdown call when the client is gone */
#define PROXY_SHUTDOWN_GRACE_MS 1000   /* Shutdown -> SIGTERM */
#define PROXY_KILL_GRACE_MS 2000       /* SIGTERM -> SIGKILL when the client is gone */

/* ---- h2watch.c: what one relayed HTTP/2 connection carries --------------- */

typedef struct proxy_h2watch proxy_h2watch;

enum proxy_h2_side { PROXY_H2_FROM_CLIENT = 0, PROXY_H2_FROM_PROVIDER = 1 };

/* Call ids come from *next_call_id (shared by a relay's connections and its
 * own Shutdown call, which runs on another thread); *open_calls counts calls
 * begun and not ended. tee may be NULL. */
int proxy_h2watch_new(recorder_tee *tee, atomic_uint_least64_t *next_call_id,
                      atomic_int *open_calls, proxy_h2watch **out);
/* The next bytes one side sent, in order, as relayed. Never fails: what it
 * cannot follow stops the watching (see proxy_h2watch_problem()). */
void proxy_h2watch_feed(proxy_h2watch *w, enum proxy_h2_side side, const uint8_t *p, size_t n,
                        int64_t t_us);
/* Why the watching stopped, or NULL. */
const char *proxy_h2watch_problem(const proxy_h2watch *w);
/* The connection is gone: calls still open end (UNAVAILABLE). Accepts NULL. */
void proxy_h2watch_free(proxy_h2watch *w, int64_t t_us);

/* ---- relay.c: the connection relay -------------------------------------- */

typedef struct proxy_relay proxy_relay;

typedef struct proxy_relay_opts {
    const char *listen_path;      /* our unix socket */
    SSL_CTX *server_tls;          /* borrowed; NULL: the client's leg is plaintext */
    const char *upstream_network; /* the provider's: "unix" or "tcp" */
    const char *upstream_address;
    SSL_CTX *client_tls; /* borrowed; NULL: the provider's leg is plaintext */
    recorder_tee *tee;   /* may be NULL */
    int notify_fd;       /* eventfd written when draining and idle */
} proxy_relay_opts;

/* Dial the provider (at most connect_timeout_ms; that connection serves the
 * client's first), listen on our socket, start the relay's thread. 0,
 * TFTAP_EIO (listen failed), TFTAP_ECHILD (provider unreachable),
 * TFTAP_EPROTO (its address unusable) or TFTAP_ENOMEM. */
int proxy_relay_start(const proxy_relay_opts *opts, int connect_timeout_ms, proxy_relay **out,
                      tftap_buf *err);
/* Ask the provider to exit as go-plugin's client does when it is done:
 * a /plugin.GRPCController/Shutdown call (on a connection of its own),
 * which makes a go-plugin server stop (removing its socket) and the
 * provider return from main. Blocks the calling thread at most timeout_ms.
 * 0 when the provider answered; TFTAP_ECHILD otherwise (it may still be on
 * its way out). */
int proxy_relay_shutdown_provider(proxy_relay *r, int timeout_ms);
/* From now on, write notify_fd whenever no call is in flight. */
void proxy_relay_drain(proxy_relay *r);
/* Calls in flight right now. */
int proxy_relay_active(proxy_relay *r);
/* Write out what is already relayed (at most 1 s), close every connection,
 * stop the thread, free everything. Accepts NULL. */
void proxy_relay_stop(proxy_relay *r);

#endif
