/* proxy: the go-plugin man-in-the-middle. It launches the real provider,
 * speaks go-plugin's handshake to both sides (its own throw-away mutual-TLS
 * certificate on each leg), relays every gRPC call by path without
 * re-encoding a byte, and hands a copy of each message to the store's
 * recorder, which also exports each call as an OTLP span when asked. Layer:
 * may use common, plugin, store and otlp.
 *
 * Ownership: proxy_meta_load() fills caller storage released with
 * proxy_meta_done(); proxy_run() borrows everything in its config. */
#ifndef TFTAP_PROXY_H
#define TFTAP_PROXY_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "otlp/otlp.h"
#include "plugin/plugin.h"
#include "store/store.h"

/* The contents of a shim directory's tftap-shim.json. Strings are owned
 * (heap) and freed by proxy_meta_done(); version may be NULL. */
typedef struct proxy_meta {
    char *provider;       /* e.g. "registry.opentofu.org/hashicorp/random" */
    char *version;        /* e.g. "3.6.0", or NULL */
    char *binary;         /* absolute path of the real provider executable */
    char *db;             /* database path */
    int record_sensitive; /* 1: do not redact sensitive values */
    int keep_raw;         /* 1: store raw message bytes too */
    char *otlp;           /* OTLP traces endpoint (tftap wrap --otlp), or NULL */
    int otlp_values;      /* 1: spans carry the calls' values (tftap wrap --otlp-values) */
} proxy_meta;

/* Read and check a shim metadata file (at most 1 MiB). On failure *meta is
 * left empty and err (if not NULL) receives a one-line reason. Returns 0,
 * TFTAP_EIO, TFTAP_ELIMIT, TFTAP_EDECODE (bad JSON or missing field) or
 * TFTAP_ENOMEM. */
int proxy_meta_load(const char *path, proxy_meta *meta, tftap_buf *err);
void proxy_meta_done(proxy_meta *meta);

/* How to run one proxied provider. Initialise with proxy_config_init(),
 * then fill in; every pointer is borrowed for the duration of proxy_run(). */
typedef struct proxy_config {
    const char *provider; /* provider address, for the record */
    const char *version;  /* may be NULL */
    const char *binary;   /* real provider executable */
    char *const *args;    /* extra arguments for it, NULL-terminated; may be NULL */
    char *const *envp;    /* the client's environment; NULL = this process's */

    const char *db; /* NULL: relay without recording */
    int64_t run_id; /* 0: the recorder makes a run of its own */
    int record_sensitive;
    int keep_raw;

    int out_fd;           /* where the handshake line and the provider's later
                           * stdout go (default 1) */
    int watch_out_fd;     /* 1 (default): the reader of out_fd going away means
                           * the client is gone: stop the provider and exit */
    int stop_fd;          /* -1 (default) or an fd that becomes readable (or
                           * hung up) when the caller wants the proxy to stop */
    int recorder_hold_fd; /* -1 (default), or an fd (a lock) the recorder's
                           * process holds open until everything is
                           * written: whoever waits for the record takes
                           * the lock (see docs/running.md) */
    /* NULL: no spans. Otherwise the recorder's process exports each call
     * it records as a span with this configuration (log is ignored: the
     * exporter's lines go to the recorder's log). */
    const otlp_config *otlp;
    int leave_run; /* 1: run_id came from store_run_join(); the
                    * recorder's process leaves it when done */
    /* NULL, or called in the recorder's process once it has left such a
     * run, its part written: what the caller does with the record then (a
     * shim: redact what core marked, which only the end tells). */
    void (*run_left)(const char *db, int64_t run_id);
    /* Called (from the calling thread) with one lowercase line about a
     * problem that does not stop the relay, e.g. recording trouble. */
    void (*warn)(void *ctx, const char *message);
    void *warn_ctx;
    /* Attach rather than start: the provider already listens at
     * attach_address (attach_network "unix" or "tcp"), as a reattached,
     * unmanaged provider does (TF_REATTACH_PROVIDERS: one a test harness
     * serves in-process). binary and args are unused, both legs are
     * plaintext (a reattached provider is dialed without TLS), and the
     * provider is the caller's: never signalled, never asked to shut down.
     * attach_protocol (5 or 6) goes into our handshake line and the record,
     * attach_pid (its process, 0 if unknown) into the record. stop_fd (or
     * out_fd's reader going away) ends the relay once the calls in flight
     * are done. */
    const char *attach_network;
    const char *attach_address;
    int attach_protocol;
    int attach_pid;
} proxy_config;

void proxy_config_init(proxy_config *cfg);

/* proxy_config_init() plus the provider, binary, database and recording
 * flags of a shim's metadata (borrowed: meta must outlive the run). The
 * caller then applies TFTAP_DB / TFTAP_RUN_ID and the like. */
void proxy_config_from_meta(proxy_config *cfg, const proxy_meta *meta);

/* Run the proxy until the provider has exited and the client's calls are
 * done, or the client went away (out_fd's reader closed, stop_fd fired: the
 * provider then gets go-plugin's Shutdown call, SIGTERM if it has not exited
 * a second later, SIGKILL 2 s after that). envp must carry what a
 * go-plugin client sets (the magic cookie, PLUGIN_PROTOCOL_VERSIONS, and
 * PLUGIN_CLIENT_CERT for mutual TLS; without it both legs are plaintext);
 * the cookie is not checked here (see plugin_cookie_ok()).
 *
 * One proxy_run() per process at a time, called before the process starts
 * threads of its own: it forks the provider and the recorder's process, and
 * blocks SIGCHLD, SIGINT, SIGTERM and SIGHUP for its duration (forwarding
 * the last three to the provider; go-plugin providers ignore SIGINT) and
 * ignores SIGPIPE; restores both before returning. The recorder's process
 * outlives the call and flushes the record on its own.
 *
 * Returns the exit code for the process: the provider's own exit status
 * (128 + signal when it was killed), or 1 when the proxy itself failed
 * before or while starting, in which case err (if not NULL) receives a
 * one-line lowercase reason. Removes its socket, and the provider's unix
 * socket once the provider is reaped (a signal leaves it behind), and
 * flushes the recorder on every path. */
int proxy_run(const proxy_config *cfg, tftap_buf *err);

/* proxy_run() for a provider that is already listening (cfg->attach_address
 * set): prints our handshake line to out_fd, relays and records until
 * stop_fd fires or out_fd's reader goes away, then lets the calls in flight
 * end (at most 5 s) and returns 0, or 1 with err saying why it could not
 * start (the provider unreachable, no socket). Signals as proxy_run(): INT,
 * TERM and HUP are held while it runs, and not passed on (the provider is
 * not ours); the caller ends it through stop_fd. */
int proxy_attach(const proxy_config *cfg, tftap_buf *err);

#endif
