/* recorder: what records the calls a relay sees, off the relay's path.
 * The tee (tee.c) takes the relay's copies of calls and messages and
 * writes them, framed (pipe.c), into a pipe to the recorder process
 * (process.c), which feeds them to the recorder (recorder.c): its decoder
 * thread (decode.c) renders calls against the provider's schema, its SQL
 * thread (sql.c) writes them into the store. Big messages go through spill
 * files instead of the pipe (docs/proxy.md, "Big messages").
 * Layer: may use common, decoder, otlp and store.
 *
 * Ownership: handles returned through **out are released with their
 * _close/_free function (NULL accepted); byte arguments are copied unless a
 * function says it takes them. */
#ifndef TFTAP_RECORDER_H
#define TFTAP_RECORDER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/common.h"
#include "decoder/decoder.h"
#include "otlp/otlp.h"
#include "store/store.h"

/* The recorder processes' log, in the database's directory (0600): their
 * problems go there, not to the provider's stderr the CLI keeps. */
#define RECORDER_LOG_NAME "tftap.log"

/* How long a recorder process keeps what the database did not take when
 * its provider is done while the database is unavailable (a PostgreSQL
 * server restarting, a full disk), trying again every second; it writes
 * the rows, and the gap row counting what was lost meanwhile, when the
 * database comes back. Nobody waits for it: `tftap run` goes on. */
#define RECORDER_LINGER_MS (10u * 60u * 1000u)

/* ---- the recorder: decodes and writes calls, never blocks its caller ------- */

typedef struct recorder recorder;

struct recorder_call_summary;

typedef struct recorder_opts {
    int64_t run_id;       /* run this process belongs to; 0 = create a run row of its own */
    int record_sensitive; /* 1: do not redact sensitive/write-only values */
    int keep_raw;         /* 1: also store raw message bytes */
    /* The one bound on the recorder's memory: what is being decoded plus
     * decoded rows not yet committed. 0 = default (256 MiB). */
    size_t max_queue_bytes;
    /* 0: an event that would pass the bound is dropped (counted, a gap row
     * later). > 0: the caller waits for room, up to block_ms (the proxy's
     * recorder process: its pipe then pushes back on the tee, whose bound
     * is the one that drops); a recorder still full after that drops,
     * counted, until it is half empty. An event bigger than the bound is
     * always dropped. */
    unsigned block_ms;
    /* What to do with records the database did not take when the recorder
     * is closed (a server that went away, a locked or full file): 0 = one
     * last attempt, then they are counted as dropped; > 0 = the SQL thread
     * keeps them and tries again every retry_ms for up to linger_ms, so
     * the rows, and the gap row counting what was lost meanwhile, are
     * written when the database comes back. recorder_drain() tells a
     * caller when the rest of the close is only this waiting. */
    unsigned linger_ms;
    /* NULL, or called once per ended call, with its final decoded image
     * (the row as stored), as soon as that image is handed to the SQL thread
     * (from the decoding caller's thread, or the SQL thread's for what an idle
     * caller left: one at a time) (a call waiting for a schema
     * to be re-decoded: once it has been, or at close). Must not block: it
     * runs on the record's pipeline. A call the recorder lost (a gap) is
     * never reported. */
    void (*on_call)(void *ctx, const struct recorder_call_summary *call);
    void *on_call_ctx;
    /* 1: on_call also gets the request and response values, redacted as a
     * default record stores them even when record_sensitive keeps them in
     * clear (re-redacted with the database's key and the schema). */
    int on_call_values;
    /* NULL, or told one line (no newline, no "tftap: ") when the recorder
     * has something to say that is not in the record: the database refusing
     * or unavailable, its queue full. From any of its threads; must not
     * block long. The recorder never writes to stderr itself. */
    void (*log)(void *ctx, const char *line);
    void *log_ctx;
    /* How long closing waits for a schema when calls still wait for one:
     * the process that asked the provider for it (the client asks once per
     * command) may not have committed it yet on a loaded machine.
     * 0 = default (5 s); ends as soon as one is found. */
    unsigned close_schema_wait_ms;
} recorder_opts;

/* What on_call is told; everything is borrowed for the callback's time. */
typedef struct recorder_call_summary {
    int64_t call_seq; /* calls.call_seq (the call id the caller gave) */
    const char *method, *type_name, *status_message; /* type_name, status_message may be NULL */
    int64_t started_us, ended_us;
    int status; /* gRPC status code */
    int64_t request_bytes, response_bytes;
    int64_t request_count, response_count;
    /* calls.response_json as stored (secrets in clear under
     * record_sensitive): to judge the call (its diagnostics), not to copy. */
    const char *response_json;
    /* With on_call_values: request_json / response_json as stored, never a
     * secret in clear; NULL when the call has no such message or when it
     * could not be redacted (a value no schema types), which *_withheld says. */
    const char *request_value, *response_value;
    int request_withheld, response_withheld;
} recorder_call_summary;

enum recorder_direction { RECORDER_REQUEST = 0, RECORDER_RESPONSE = 1 };

/* Open (creating 0600 with its parent directory if needed) the database and
 * start its decoder and SQL threads. A database that cannot be opened is not fatal to
 * the caller's relay: the recorder still returns 0 and counts what it drops,
 * retrying the open and recording the gap once it succeeds; only ENOMEM and
 * bad arguments fail. */
int recorder_open(const char *db_path, const recorder_opts *opts, recorder **out);

/* The provider process this recorder records for. */
/* The provider process did not start (why: its shim's words): recorded
 * as processes.start_error. */
void recorder_start_failed(recorder *r, const char *why);
void recorder_process(recorder *r, const char *provider_addr, const char *version,
                      const char *binary_path, int protocol_version, int pid);

/* Calls: call_id is unique within this recorder; times are microseconds
 * since the Unix epoch. Each decodes the event in the caller's thread (one
 * caller at a time) and keeps what it needs of its arguments; when the
 * bound is reached the event is dropped and counted, or with opts.block_ms
 * the call waits for room. */
void recorder_call_begin(recorder *r, uint64_t call_id, const char *method, int64_t t_us);
void recorder_message(recorder *r, uint64_t call_id, enum recorder_direction dir, int64_t t_us,
                      const void *bytes, size_t len);
/* recorder_message() without the copy: takes bytes (malloc'd, len
 * bytes), freed by the recorder whatever happens. */
void recorder_message_take(recorder *r, uint64_t call_id, enum recorder_direction dir, int64_t t_us,
                           void *bytes, size_t len);
/* A message in a file (a big one, spilled by the relay), read and removed
 * by the recorder when it decodes it, or removed when it is dropped: the
 * file is the recorder's from now on. Takes path (malloc'd). Its memory
 * is outside the bound of opts.max_queue_bytes: one such message is
 * decoded and written at a time (docs/proxy.md, "Big messages"). */
void recorder_message_file(recorder *r, uint64_t call_id, enum recorder_direction dir, int64_t t_us,
                           char *path);
void recorder_call_end(recorder *r, uint64_t call_id, int64_t t_us, int status_code,
                       const char *status_message);
/* n events were lost before they reached the recorder: dropped from the
 * proxy's full queue (RECORDER_LOST_QUEUE_FULL), or a malformed frame on its
 * pipe (RECORDER_LOST_MALFORMED). Counted as dropped and recorded as a gap
 * whose reason says "queue full" or "malformed recorder input". */
/* RECORDER_LOST_SHIM_DIED: n calls cut off because the shim feeding us ended
 * without saying goodbye (killed); what it had not handed over yet is not
 * known: the gap row says so even when n is 0. */
/* RECORDER_LOST_TOO_LARGE: messages bigger than the recorder takes (relayed
 * whole, never recorded); RECORDER_LOST_SPILL_FAILED: big messages whose
 * spill file could not be written or read (a full disk). */
enum recorder_lost {
    RECORDER_LOST_QUEUE_FULL = 0,
    RECORDER_LOST_MALFORMED = 1,
    RECORDER_LOST_SHIM_DIED = 2,
    RECORDER_LOST_TOO_LARGE = 3,
    RECORDER_LOST_SPILL_FAILED = 4,
};
void recorder_lost(recorder *r, uint64_t n, enum recorder_lost why);

/* Stop taking events and write everything taken. Returns 0 once all of it
 * is committed, or TFTAP_ESTORE as soon as a last attempt finds the
 * database unavailable: what was not written stays with the recorder
 * (recorder_close keeps trying for opts.linger_ms). Waits only for
 * the decoder, for commits (a locked SQLite file: up to 30 s) and for one
 * attempt to open the database. Calling it twice is harmless. */
int recorder_drain(recorder *r);

/* Drain, then (with opts.linger_ms) keep trying to write what the database
 * did not take, stop the threads, close the database. */
void recorder_close(recorder *r);

/* Tuning knobs most callers leave at 0 (= default); tests shorten them. */
typedef struct recorder_tuning {
    unsigned retry_ms;  /* re-open/re-write an unavailable database this often (1000) */
    unsigned commit_ms; /* commit at least this often while busy (100) */
} recorder_tuning;
void recorder_tune(recorder *r, const recorder_tuning *t);

/* Counters for tests and for the proxy's exit summary (snapshot). */
typedef struct recorder_stats {
    uint64_t events;       /* accepted for decoding */
    uint64_t dropped;      /* refused because the bound was full or the database was down */
    uint64_t written;      /* committed to the database */
    uint64_t gaps;         /* gap rows written */
    size_t inflight_bytes; /* everything counted against max_queue_bytes now */
    size_t peak_bytes;     /* the most inflight_bytes has been */
    int db_ok;             /* 1 while the database is open and writable */
    int64_t process_row;   /* processes.id once written, else 0 */
    int64_t run_id;        /* runs.id once known, else 0 */
} recorder_stats;
void recorder_get_stats(recorder *r, recorder_stats *out);

/* ---- the recorder process, its pipe and the tee ---------------------------- */

/* The one memory bound on everything queued between the relay and SQLite
 * (docs/proxy.md, "Recording"): the tee's queue, the pipe, and the recorder
 * process's events and decoded rows. A message beyond its share is dropped
 * at the tee, counted, and recorded as a gap; behind the tee nothing drops,
 * the recorder process stops reading the pipe instead. */
#define RECORDER_BUDGET ((size_t)256 << 20)
#define RECORDER_PIPE_BYTES ((size_t)1 << 20) /* asked of F_SETPIPE_SZ */
/* The tee's share: messages are queued up to 15/16 of it; the rest is for
 * calls' begin and end events, so that calls stay paired while messages
 * are being dropped. */
#define RECORDER_TEE_MAX_BYTES (RECORDER_BUDGET / 2)
/* The recorder process's share (recorder_opts.max_queue_bytes). */
#define RECORDER_PROCESS_MAX_BYTES (RECORDER_BUDGET - RECORDER_TEE_MAX_BYTES - RECORDER_PIPE_BYTES)
/* The biggest message recorded through memory: one that fits both shares. */
#define RECORDER_MESSAGE_MAX (RECORDER_PROCESS_MAX_BYTES - ((size_t)64 << 10))
/* Messages of RECORDER_SPILL_MIN bytes or more do not pass through memory:
 * the watcher writes them into a spill file as they are relayed, and the
 * recorder process reads the file (docs/proxy.md, "Big messages"). The
 * biggest recorded that way is what a provider accepts (and the decoder
 * takes). */
#define RECORDER_SPILL_MIN ((size_t)4 << 20)
#define RECORDER_SPILL_MAX DEC_DEFAULT_MAX_BYTES
/* The spill directory, beside the database's other files (store_side_dir):
 * "spill" in it. malloc'd; NULL without one. */
char *recorder_spill_dir(const char *db);

/* ---- process.c: the recorder's own process -------------------------------- */

/* One event on the pipe to the recorder process: this header, then len
 * payload bytes (method, status message, message bytes, or for PROCESS
 * "provider\0version\0binary" with a = protocol, b = pid). Both ends are
 * this program, so the header is in host byte order. */
enum recorder_frame_kind {
    RECORDER_FRAME_PROCESS = 1,
    RECORDER_FRAME_BEGIN = 2,
    /* a = enum recorder_direction */
    RECORDER_FRAME_MESSAGE = 3,
    /* a = status code */
    RECORDER_FRAME_END = 4,
    /* call_id = events the tee dropped since the last one, a = why (enum
     * recorder_lost: QUEUE_FULL, TOO_LARGE or SPILL_FAILED); no payload */
    RECORDER_FRAME_LOST = 5,
    /* the shim ends on purpose, nothing follows; no payload. EOF without
     * it: the shim died (killed) */
    RECORDER_FRAME_BYE = 6,
    /* the provider did not start: why, as text */
    RECORDER_FRAME_START_FAILED = 7,
    /* a = enum recorder_direction; payload: the spill file's name (its
     * directory is recorder_spill_dir's), which the recorder removes */
    RECORDER_FRAME_SPILL = 8,
};

struct recorder_frame {
    uint32_t kind;
    int32_t a;
    int32_t b;
    uint32_t len;
    uint64_t call_id;
    int64_t t_us;
};

/* Bounds the reader checks: method, status message and each PROCESS string
 * (the tee cuts them to this); any frame's payload. */
#define RECORDER_TEXT_MAX ((size_t)64 << 10)
#define RECORDER_FRAME_MAX RECORDER_MESSAGE_MAX

/* What the pipe's reader hands on, one callback per frame; message takes
 * bytes (malloc'd). lost: n events the tee dropped (why =
 * RECORDER_LOST_QUEUE_FULL) or n frames that failed their checks
 * (RECORDER_LOST_MALFORMED). */
typedef struct recorder_pipe_sink {
    void *ctx;
    void (*process)(void *ctx, const char *provider, const char *version, const char *binary,
                    int protocol, int pid);
    void (*begin)(void *ctx, uint64_t call_id, const char *method, int64_t t_us);
    void (*message)(void *ctx, uint64_t call_id, enum recorder_direction dir, int64_t t_us,
                    uint8_t *bytes, size_t len);
    void (*end)(void *ctx, uint64_t call_id, int64_t t_us, int status, const char *message);
    void (*lost)(void *ctx, uint64_t n, enum recorder_lost why);
    void (*bye)(void *ctx);                           /* may be NULL */
    void (*start_failed)(void *ctx, const char *why); /* may be NULL */
    /* A message in a spill file (its name, checked: no '/'). */
    void (*spilled)(void *ctx, uint64_t call_id, enum recorder_direction dir, int64_t t_us,
                    const char *name);
} recorder_pipe_sink;

/* Read frames from fd until EOF (pipe.c), messages up to max_message
 * bytes. A frame that fails a check is skipped and counted (sink->lost); a
 * length no frame can have ends the reading. One reader per process (its
 * buffer is static). 0, or TFTAP_EPROTO when some frame was bad. */
int recorder_pipe_read(int fd, size_t max_message, const recorder_pipe_sink *sink);

typedef struct recorder_proc {
    pid_t pid; /* the intermediate process (already reaped), for the record */
    int fd;    /* write end of the event pipe */
    /* Set by the caller before recorder_proc_start(): */
    const char *provider; /* names the process in the log's lines; may be NULL */
    int hold_fd;          /* -1, or an fd the recorder process keeps open while it lives */
    int leave_run;        /* 1: store_run_leave(opts->run_id) once everything is written */
    void (*run_left)(const char *db, int64_t run_id); /* NULL, or called after leaving */
    const otlp_config *otlp; /* NULL, or export each call as a span (otlp.h) */
    const char *version;     /* the provider's version, for the spans; may be NULL */
} recorder_proc;

/* Fork the recorder process (call before any thread exists): it opens db
 * with opts, applies events from the pipe and, at EOF, flushes, closes and
 * exits. What it would print goes to the log beside db (RECORDER_LOG_NAME),
 * one prefixed line each. 0 or TFTAP_EIO. */
int recorder_proc_start(const char *db, const recorder_opts *opts, recorder_proc *rp,
                        tftap_buf *err);
/* Close our end; the recorder process finishes on its own. */
void recorder_proc_detach(recorder_proc *rp);
/* This process's part of a shared run is over (store_run_leave); the last
 * one to leave ends the run. Failing is one line on stderr. */
void recorder_proc_leave_run(const char *db, int64_t run_id);

/* ---- tee.c: copies of messages to the recorder, off the relay's thread -- */

typedef struct recorder_tee recorder_tee;

/* fd is the recorder pipe; fd < 0: *out is NULL and every tee call is a
 * no-op. The tee does not close fd. max_bytes bounds the queue (see push()
 * in tee.c: messages stop 1/16 short of it, leaving room for begin/end). */
int recorder_tee_new(int fd, size_t max_bytes, recorder_tee **out);
void recorder_tee_process(recorder_tee *t, const char *provider, const char *version,
                          const char *binary, int protocol_version, int pid);
void recorder_tee_begin(recorder_tee *t, uint64_t call_id, const char *method, int64_t t_us);
/* Takes data (malloc'd, len bytes: one gRPC message without its 5-byte
 * prefix); freed by the tee whatever happens. */
void recorder_tee_message(recorder_tee *t, uint64_t call_id, enum recorder_direction dir,
                          int64_t t_us, uint8_t *data, size_t len);
/* The provider did not start: why (cut to what the reader takes). Goes
 * out at once, ahead of anything gathered. */
void recorder_tee_start_failed(recorder_tee *t, const char *why);
/* Count a message (or a call) the relay could not hand over as lost. */
void recorder_tee_lost(recorder_tee *t);
/* The same, saying why (enum recorder_lost). */
void recorder_tee_lost_as(recorder_tee *t, enum recorder_lost why);
/* Spill big messages into files in dir (recorder_spill_dir), made 0700 at the
 * first one; without it they pass through memory, up to
 * RECORDER_MESSAGE_MAX. dir is copied. */
void recorder_tee_spill_to(recorder_tee *t, const char *dir);
/* One message being written into a spill file. */
typedef struct recorder_spill {
    int fd; /* -1: none */
    char name[64];
} recorder_spill;
/* Start a spill file for a message: 0, or -1 when there is no spill
 * directory or the file cannot be made (sp->fd stays -1). */
int recorder_tee_spill_open(recorder_tee *t, uint64_t call_id, enum recorder_direction dir,
                            recorder_spill *sp);
/* Append the message's next bytes. -1: the file could not take them; it
 * is gone, and the message counted lost (SPILL_FAILED). */
int recorder_tee_spill_write(recorder_tee *t, recorder_spill *sp, const void *p, size_t n);
/* The message is whole: the file goes to the recorder (or, when the event
 * cannot be queued or written, is removed and counted lost). */
void recorder_tee_spill_done(recorder_tee *t, recorder_spill *sp, uint64_t call_id,
                             enum recorder_direction dir, int64_t t_us);
/* The message will never be whole (its stream was reset): the file goes. */
void recorder_tee_spill_abort(recorder_tee *t, recorder_spill *sp);
void recorder_tee_end(recorder_tee *t, uint64_t call_id, int64_t t_us, int status,
                      const char *message);
/* Write out everything queued, stop the thread. Accepts NULL. */
void recorder_tee_free(recorder_tee *t);
/* How the tee ended: whether the recorder's pipe broke (the recorder died:
 * what it had not written is lost), and what the relay saw of each call. */
struct recorder_tee_outcome {
    int pipe_broke;
    uint64_t dropped;
    unsigned char *ledger; /* enum store_relayed by call id - 1; the caller free()s it */
    size_t ncalls;
    int ledger_short; /* some calls are not in the ledger */
};
/* recorder_tee_free, telling how it ended (out may be NULL). */
void recorder_tee_finish(recorder_tee *t, struct recorder_tee_outcome *out);
/* The most the queue has held (bytes counted against max_bytes). */
size_t recorder_tee_peak_bytes(const recorder_tee *t);
/* Events dropped because the queue was full or the pipe broke. */
uint64_t recorder_tee_dropped(const recorder_tee *t);

/* Add the answered calls of run_id (of its process process_id only, when
 * > 0) to the exporter as spans, with their values as the record holds
 * them (docs/otlp.md): how spans with values leave once the record is
 * redacted, at the end of tftap run and when a wrapped recorder left its
 * run. How many, or a store error (< 0). */
int64_t recorder_export_spans(store *s, int64_t run_id, int64_t process_id, otlp_exporter *ox);

#endif
