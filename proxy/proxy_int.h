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
#include "store/store.h"

/* Bounds on what the child may say before we trust it. */
#define PROXY_CONNECT_TIMEOUT_MS 10000 /* dialing the child after its handshake */
#define PROXY_DRAIN_TIMEOUT_MS 5000    /* calls left after the child exited */
#define PROXY_SHUTDOWN_CALL_MS 1000    /* our Shutdown call when the client is gone */
#define PROXY_SHUTDOWN_GRACE_MS 1000   /* Shutdown -> SIGTERM */
#define PROXY_KILL_GRACE_MS 2000       /* SIGTERM -> SIGKILL when the client is gone */

/* The one memory bound on everything queued between the relay and SQLite
 * (docs/proxy.md, "Recording"): the tee's queue, the pipe, and the recorder
 * process's events and decoded rows. A message beyond its share is dropped
 * at the tee, counted, and recorded as a gap; behind the tee nothing drops,
 * the recorder process stops reading the pipe instead. */
#define PROXY_RECORD_BUDGET ((size_t)256 << 20)
#define PROXY_REC_PIPE_BYTES ((size_t)1 << 20) /* asked of F_SETPIPE_SZ */
/* The tee's share: messages are queued up to 15/16 of it; the rest is for
 * calls' begin and end events, so that calls stay paired while messages
 * are being dropped. */
#define PROXY_TEE_MAX_BYTES (PROXY_RECORD_BUDGET / 2)
/* The recorder process's share (store_recorder_opts.max_queue_bytes). */
#define PROXY_RECORDER_MAX_BYTES (PROXY_RECORD_BUDGET - PROXY_TEE_MAX_BYTES - PROXY_REC_PIPE_BYTES)
/* The biggest message recorded through memory: one that fits both shares. */
#define PROXY_REC_MESSAGE_MAX (PROXY_RECORDER_MAX_BYTES - ((size_t)64 << 10))
/* Messages of PROXY_SPILL_MIN bytes or more do not pass through memory:
 * the watcher writes them into a spill file as they are relayed, and the
 * recorder process reads the file (docs/proxy.md, "Big messages"). The
 * biggest recorded that way is what a provider accepts (and the decoder
 * takes). */
#define PROXY_SPILL_MIN ((size_t)4 << 20)
#define PROXY_REC_SPILL_MAX DEC_DEFAULT_MAX_BYTES
/* The spill directory, beside the database's other files (store_side_dir):
 * "spill" in it. malloc'd; NULL without one. */
char *proxy_spill_dir(const char *db);

/* ---- recproc.c: the recorder's own process ---------------------------- */

/* One event on the pipe to the recorder process: this header, then len
 * payload bytes (method, status message, message bytes, or for PROCESS
 * "provider\0version\0binary" with a = protocol, b = pid). Both ends are
 * this program, so the header is in host byte order. */
enum proxy_rec_kind {
    PROXY_REC_PROCESS = 1,
    PROXY_REC_BEGIN = 2,
    PROXY_REC_MESSAGE = 3,      /* a = enum store_direction */
    PROXY_REC_END = 4,          /* a = status code */
    PROXY_REC_LOST = 5,         /* call_id = events the tee dropped since the last one, a = why
                                 * (enum store_lost: QUEUE_FULL, TOO_LARGE or SPILL_FAILED); no
                                 * payload */
    PROXY_REC_BYE = 6,          /* the shim ends on purpose, nothing follows; no payload. EOF
                                 * without it: the shim died (killed) */
    PROXY_REC_START_FAILED = 7, /* the provider did not start: why, as text */
    PROXY_REC_SPILL = 8,        /* a = enum store_direction; payload: the spill file's name (its
                                 * directory is proxy_spill_dir's), which the recorder removes */
};

struct proxy_rec_frame {
    uint32_t kind;
    int32_t a;
    int32_t b;
    uint32_t len;
    uint64_t call_id;
    int64_t t_us;
};

/* Bounds the reader checks: method, status message and each PROCESS string
 * (the tee cuts them to this); any frame's payload. */
#define PROXY_REC_TEXT_MAX ((size_t)64 << 10)
#define PROXY_REC_FRAME_MAX PROXY_REC_MESSAGE_MAX

/* What the pipe's reader hands on, one callback per frame; message takes
 * bytes (malloc'd). lost: n events the tee dropped (why =
 * STORE_LOST_QUEUE_FULL) or n frames that failed their checks
 * (STORE_LOST_MALFORMED). */
typedef struct proxy_recpipe_sink {
    void *ctx;
    void (*process)(void *ctx, const char *provider, const char *version, const char *binary,
                    int protocol, int pid);
    void (*begin)(void *ctx, uint64_t call_id, const char *method, int64_t t_us);
    void (*message)(void *ctx, uint64_t call_id, enum store_direction dir, int64_t t_us,
                    uint8_t *bytes, size_t len);
    void (*end)(void *ctx, uint64_t call_id, int64_t t_us, int status, const char *message);
    void (*lost)(void *ctx, uint64_t n, enum store_lost why);
    void (*bye)(void *ctx);                           /* may be NULL */
    void (*start_failed)(void *ctx, const char *why); /* may be NULL */
    /* A message in a spill file (its name, checked: no '/'). */
    void (*spilled)(void *ctx, uint64_t call_id, enum store_direction dir, int64_t t_us,
                    const char *name);
} proxy_recpipe_sink;

/* Read frames from fd until EOF (recpipe.c), messages up to max_message
 * bytes. A frame that fails a check is skipped and counted (sink->lost); a
 * length no frame can have ends the reading. One reader per process (its
 * buffer is static). 0, or TFTAP_EPROTO when some frame was bad. */
int proxy_recpipe_read(int fd, size_t max_message, const proxy_recpipe_sink *sink);

typedef struct proxy_recproc {
    pid_t pid; /* the intermediate process (already reaped), for the record */
    int fd;    /* write end of the event pipe */
    /* Set by the caller before proxy_recproc_start(): */
    const char *provider; /* names the process in the log's lines; may be NULL */
    int hold_fd;          /* -1, or an fd the recorder process keeps open while it lives */
    int leave_run;        /* 1: store_run_leave(opts->run_id) once everything is written */
    void (*run_left)(const char *db, int64_t run_id); /* NULL, or called after leaving */
    const otlp_config *otlp; /* NULL, or export each call as a span (otlp.h) */
    const char *version;     /* the provider's version, for the spans; may be NULL */
} proxy_recproc;

/* Fork the recorder process (call before any thread exists): it opens db
 * with opts, applies events from the pipe and, at EOF, flushes, closes and
 * exits. What it would print goes to the log beside db (PROXY_LOG_NAME),
 * one prefixed line each. 0 or TFTAP_EIO. */
int proxy_recproc_start(const char *db, const store_recorder_opts *opts, proxy_recproc *rp,
                        tftap_buf *err);
/* Close our end; the recorder process finishes on its own. */
void proxy_recproc_detach(proxy_recproc *rp);
/* This process's part of a shared run is over (store_run_leave); the last
 * one to leave ends the run. Failing is one line on stderr. */
void proxy_recproc_leave_run(const char *db, int64_t run_id);

/* ---- tee.c: copies of messages to the recorder, off the relay's thread -- */

typedef struct proxy_tee proxy_tee;

/* fd is the recorder pipe; fd < 0: *out is NULL and every tee call is a
 * no-op. The tee does not close fd. max_bytes bounds the queue (see push()
 * in tee.c: messages stop 1/16 short of it, leaving room for begin/end). */
int proxy_tee_new(int fd, size_t max_bytes, proxy_tee **out);
void proxy_tee_process(proxy_tee *t, const char *provider, const char *version, const char *binary,
                       int protocol_version, int pid);
void proxy_tee_begin(proxy_tee *t, uint64_t call_id, const char *method, int64_t t_us);
/* Takes data (malloc'd, len bytes: one gRPC message without its 5-byte
 * prefix); freed by the tee whatever happens. */
void proxy_tee_message(proxy_tee *t, uint64_t call_id, enum store_direction dir, int64_t t_us,
                       uint8_t *data, size_t len);
/* The provider did not start: why (cut to what the reader takes). Goes
 * out at once, ahead of anything gathered. */
void proxy_tee_start_failed(proxy_tee *t, const char *why);
/* Count a message (or a call) the relay could not hand over as lost. */
void proxy_tee_lost(proxy_tee *t);
/* The same, saying why (enum store_lost). */
void proxy_tee_lost_as(proxy_tee *t, enum store_lost why);
/* Spill big messages into files in dir (proxy_spill_dir), made 0700 at the
 * first one; without it they pass through memory, up to
 * PROXY_REC_MESSAGE_MAX. dir is copied. */
void proxy_tee_spill_to(proxy_tee *t, const char *dir);
/* One message being written into a spill file. */
typedef struct proxy_spill {
    int fd; /* -1: none */
    char name[64];
} proxy_spill;
/* Start a spill file for a message: 0, or -1 when there is no spill
 * directory or the file cannot be made (sp->fd stays -1). */
int proxy_tee_spill_open(proxy_tee *t, uint64_t call_id, enum store_direction dir, proxy_spill *sp);
/* Append the message's next bytes. -1: the file could not take them; it
 * is gone, and the message counted lost (SPILL_FAILED). */
int proxy_tee_spill_write(proxy_tee *t, proxy_spill *sp, const void *p, size_t n);
/* The message is whole: the file goes to the recorder (or, when the event
 * cannot be queued or written, is removed and counted lost). */
void proxy_tee_spill_done(proxy_tee *t, proxy_spill *sp, uint64_t call_id, enum store_direction dir,
                          int64_t t_us);
/* The message will never be whole (its stream was reset): the file goes. */
void proxy_tee_spill_abort(proxy_tee *t, proxy_spill *sp);
void proxy_tee_end(proxy_tee *t, uint64_t call_id, int64_t t_us, int status, const char *message);
/* Write out everything queued, stop the thread. Accepts NULL. */
void proxy_tee_free(proxy_tee *t);
/* How the tee ended: whether the recorder's pipe broke (the recorder died:
 * what it had not written is lost), and what the relay saw of each call. */
struct proxy_tee_outcome {
    int pipe_broke;
    uint64_t dropped;
    unsigned char *ledger; /* enum store_relayed by call id - 1; the caller free()s it */
    size_t ncalls;
    int ledger_short; /* some calls are not in the ledger */
};
/* proxy_tee_free, telling how it ended (out may be NULL). */
void proxy_tee_finish(proxy_tee *t, struct proxy_tee_outcome *out);
/* The most the queue has held (bytes counted against max_bytes). */
size_t proxy_tee_peak_bytes(const proxy_tee *t);
/* Events dropped because the queue was full or the pipe broke. */
uint64_t proxy_tee_dropped(const proxy_tee *t);

/* ---- h2watch.c: what one relayed HTTP/2 connection carries --------------- */

typedef struct proxy_h2watch proxy_h2watch;

enum proxy_h2_side { PROXY_H2_FROM_CLIENT = 0, PROXY_H2_FROM_PROVIDER = 1 };

/* Call ids come from *next_call_id (shared by a relay's connections and its
 * own Shutdown call, which runs on another thread); *open_calls counts calls
 * begun and not ended. tee may be NULL. */
int proxy_h2watch_new(proxy_tee *tee, atomic_uint_least64_t *next_call_id, atomic_int *open_calls,
                      proxy_h2watch **out);
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
    proxy_tee *tee;      /* may be NULL */
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
