/* recorder: the module's private header, shared by its files (recorder.c:
 * open, the caller's side and close; decode.c: calls in memory and the
 * decoding stage, run in the callers' threads; quoted.c: a call's secrets cut out of its
 * provider's words; sql.c: the SQL thread; data.c: freeing what they
 * hand each other; tee.c, pipe.c and process.c: the recorder process and what feeds it). Nothing
 * outside recorder/ includes it. The threads meet only in the fields marked "under mu". */
#ifndef TFTAP_RECORDER_INT_H
#define TFTAP_RECORDER_INT_H

#include "recorder/recorder.h"

#include <pthread.h>

#include <openssl/evp.h>

#include "decoder/decoder.h"

#define DEFAULT_QUEUE_BYTES ((size_t)256 << 20)
#define DEFAULT_RETRY_MS 1000u
#define DEFAULT_COMMIT_MS 100u
/* How long the SQL thread lets ops gather after a commit before the next
 * (at most half of commit_ms). */
#define GATHER_MS 50u
/* How long what the callers decoded gathers before it is handed to the SQL
 * thread (at most a quarter of commit_ms): a call whose request and response
 * arrive within it is written once. */
#define DECODE_GATHER_MS 25u
/* Raw bytes kept in memory to re-decode calls that arrived before any
 * schema was known. Past this they stay undecoded. */
#define RETAIN_MAX_BYTES ((size_t)64 << 20)
/* How long the final flush keeps retrying a locked database. */
#define CLOSE_BUSY_DEADLINE_MS 30000u
#define SCHEMA_POLL_MS 500
#define CLOSE_SCHEMA_WAIT_MS 5000u /* recorder_opts.close_schema_wait_ms's default */
#define CALL_BUCKETS 1024
#define BINARY_STAT_LEN 128 /* "dev:ino:size:mtime:ctime" of a provider binary */

enum ev_kind { EV_BEGIN, EV_MESSAGE, EV_END };

/* Why events were lost, as a gap row says: the reasons callers tell
 * (enum recorder_lost, its values first) and the recorder's own. */
enum rec_lost_why {
    REC_LOST_DB = RECORDER_LOST_SPILL_FAILED + 1, /* the database was unavailable */
    REC_LOST_WHYS
};

/* One thing a caller tells (recorder.c), decoded at once in the caller's
 * thread (decode.c): it lives on the caller's stack, its bytes are the
 * caller's unless owned. */
struct event {
    enum ev_kind kind;
    enum recorder_direction dir;
    uint64_t call_id;
    int64_t t_us;
    int status;
    size_t len;       /* message bytes */
    const char *text; /* method or status message, NUL-terminated */
    char *spill_path; /* a message in this file (recorder_message_file), which the
                       * event owns: removed once it is decoded */
    const unsigned char *bytes;
    void *owned; /* bytes taken from the caller (recorder_message_take), freed
                  * once decoded unless a schema op took them */
};

struct rawmsg {
    struct rawmsg *next;
    enum recorder_direction dir;
    size_t len;
    unsigned char bytes[];
};

/* One direction of a call as rendered so far: the JSON of each message
 * joined by commas; written as the object itself for one message of a
 * unary call, else as an array. */
struct side {
    tftap_buf json;
    int64_t bytes;
    int64_t count;
    size_t big; /* of json, what spilled messages rendered: outside the bound */
    int handed; /* its one big message's JSON went to the SQL thread alone (written
                 * once); later images keep the column */
    int sent;   /* an image holds the JSON as it is now: later images keep the column */
};

struct call {
    struct call *hnext;
    struct call *lnext; /* all calls, in begin order */
    uint64_t call_id;
    int64_t row; /* calls.id, 0 until written */
    int row_gen; /* transaction generation that wrote row */
    char *method;
    int stream;
    int64_t started_us, ended_us;
    int ended;
    int status;
    char *status_message;
    char *type_name;
    struct side req, resp;
    char *decode_error;
    int decoded_with_schema;
    int big; /* a spilled message is part of it: its images go one at a time */
    int dirty;
    int64_t msg_seq;
    struct rawmsg *raws, **raws_tail; /* kept for re-decoding */
    size_t raw_bytes;
    int retain;     /* 1 while raws are being kept */
    int emitted;    /* a row image has been handed to the SQL thread */
    int reported;   /* opts.on_call has been told of its final image */
    dec_memo *memo; /* its DynamicValues rendered so far (a plan repeats them) */
    /* The clear strings of the values its schema marks sensitive that its
     * messages carried, each ended by a NUL: cut out of the provider's
     * words (diagnostics, status message), where they may be quoted. */
    tftap_buf quoted;
};

struct procinfo {
    char *provider, *version, *binary_path;
    char *start_error; /* why the provider did not start, or NULL */
    int protocol, pid;
    int changed;
};

enum op_kind { OP_CALL, OP_RAW, OP_PROCESS, OP_SCHEMA, OP_GAP, OP_END };

/* One idempotent change for the SQL thread. Strings and bytes are owned. */
struct op {
    struct op *next;
    enum op_kind kind;
    uint64_t events; /* recorder events this op completes (stats.written) */
    size_t size;     /* bytes held, for the bound on ops in flight */
    /* OP_CALL: the call's whole state; OP_RAW: one message (call_seq, seq) */
    int64_t call_seq;
    int stream, ended, status;
    int64_t started_us, ended_us;
    int64_t req_bytes, resp_bytes, req_count, resp_count;
    char *method, *status_message, *type_name, *req_json, *resp_json, *decode_error;
    int req_keep, resp_keep; /* OP_CALL: the column was written before: keep it */
    size_t big;              /* JSON of a spilled message held: outside size and the bound */
    char schema_sha[65];     /* OP_CALL: schema used ("" none); OP_SCHEMA: its hash */
    int64_t msg_seq, t_us;
    enum recorder_direction dir;
    unsigned char *bytes; /* OP_RAW message, OP_SCHEMA raw (NULL: link only) */
    size_t len;
    /* OP_PROCESS */
    char *provider, *version, *binary_path, *start_error;
    int protocol, pid;
    char binary_sha[65];
    char binary_stat[BINARY_STAT_LEN];
    /* OP_SCHEMA */
    const char *schema_kind;   /* "provider" or "identity" */
    const char *schema_source; /* "response" or "earlier" */
    /* OP_GAP */
    int64_t gap_seq; /* gaps.seq: the row is written once however often the op is */
    uint64_t lost;
    unsigned char lost_why[REC_LOST_WHYS]; /* which reasons (a shim's death: even with lost 0) */
    char *reason;                          /* OP_GAP of refused writes (sql.c): its reason, owned */
};

struct recorder {
    char *path;
    store_hold *hold; /* the run, held while we write it (SQL thread) */
    int64_t hold_run; /* which run hold holds */
    recorder_opts opts;
    unsigned retry_ms, commit_ms; /* under mu */

    /* The decoding stage: held by a caller decoding what it tells, by
     * close's last words, or by the SQL thread handing over what a caller
     * that went quiet left (rec_decoder_idle). Taken before mu, never while
     * holding it. */
    pthread_mutex_t dec_mu;
    pthread_mutex_t mu;
    pthread_cond_t cv;   /* a decoding caller waits for the SQL thread */
    pthread_cond_t scv;  /* SQL thread waits for ops */
    pthread_cond_t room; /* a blocking caller waits for the bound to allow it */
    pthread_t sql_thread;
    int sql_started;
    int stop;     /* under mu: close requested */
    int sql_stop; /* under mu: decoder finished, SQL thread drains and exits */
    /* under mu: decoded state not handed over yet (or a schema to look for),
     * due for rec_decoder_idle at idle_due_ms if no caller hands it over */
    int idle_owed;
    int64_t idle_due_ms;
    /* The one bound (opts.max_queue_bytes): bytes being decoded plus bytes
     * of ops not yet committed. */
    size_t inflight_bytes;
    size_t peak_bytes;
    int overflowing;       /* a blocking caller waited block_ms in vain: drop until half empty */
    struct procinfo pinfo; /* under mu */
    recorder_stats stats;  /* under mu */
    /* under mu: told by recorder_lost, by reason, not yet in lost */
    uint64_t told_lost[REC_LOST_WHYS];
    int told_shim_died; /* under mu: a shim's death told (a gap even without a loss) */
    /* under mu: JSON of spilled messages handed to the SQL thread and not yet
     * committed; the decoder starts on the next spilled message only at 0,
     * so that one big message is in memory at a time. */
    size_t big_inflight;
    int logged_full;

    /* ---- shared between the two threads, under mu ---- */
    struct op *ops, **ops_tail; /* decoder -> SQL thread */
    size_t ops_bytes;
    int sql_ok;        /* the SQL thread has a working connection */
    int sql_gathering; /* it lets ops gather until a deadline (sql.c) */
    int ops_urgent;    /* ops carry a schema or process details: no gathering */
    int sql_tried;     /* it has tried to open the database once */
    int sql_stuck;     /* stopping, the last attempt failed: what is left lingers */
    int sql_done;      /* the SQL thread has nothing left to write (or gave up) */
    int key_ready;
    unsigned char shared_key[STORE_KEY_LEN];
    int64_t shared_process_row;
    char borrow_want[65]; /* binary sha the decoder wants a schema for */
    int borrow_asked;
    unsigned char *borrow_raw; /* answer: a schema recorded earlier */
    size_t borrow_len;
    int borrow_protocol, borrow_ready;
    char borrow_sha[65];
    /* the decoder asks for the digest an earlier process recorded of its
     * binary, unchanged (decode.c known_digest); the SQL thread answers */
    char digest_stat[BINARY_STAT_LEN];
    int digest_asked, digest_answered;
    char digest_sha[65];

    /* ---- the decoding stage: under dec_mu ---- */
    int decoder_done;         /* close's last words are said: nothing more is decoded */
    int64_t last_handover_ms; /* when ops were last handed over */
    unsigned accounted;       /* events since the rendered bytes were last counted */
    int64_t owed_since_ms;    /* the first event decoded since the last hand-over, or 0 */
    unsigned stage_commit_ms; /* commit_ms as last read under mu */
    int64_t noted_due_ms;     /* idle_due_ms as last told (note_idle) */
    int out_urgent;           /* out holds a schema or process op: hand over at once */
    unsigned char key[STORE_KEY_LEN];
    int have_key;
    tftap_hmac *mac;                       /* HMAC-SHA256 keyed with key */
    struct call *decoding;                 /* whose message is being rendered */
    uint64_t lost;                         /* events lost, not yet in a gap op */
    int64_t gap_seq;                       /* gap ops made so far */
    unsigned char lost_why[REC_LOST_WHYS]; /* why; a shim's death makes a gap even
                                            * when lost is 0 */
    struct procinfo proc;                  /* decoder's copy */
    char binary_sha256[65];
    char binary_stat[BINARY_STAT_LEN]; /* identity of the file digested, or "" */
    int have_binary_sha;
    int proc_dirty;   /* process details changed, not yet handed over */
    int borrow_tried; /* asked synchronously for an earlier schema */
    dec_schema *schema;
    char schema_sha[65];
    const char *schema_source;
    unsigned char *identity_raw; /* GetResourceIdentitySchemas response */
    size_t identity_raw_len;
    char identity_sha[65];
    int identity_applied;
    int64_t last_schema_poll_ms;
    struct call *buckets[CALL_BUCKETS];
    struct call *calls, **calls_tail;
    size_t retained_bytes;
    int retain_disabled;
    struct op *out, **out_tail; /* ops being built, handed over at once */
    uint64_t out_events;        /* events applied since the last hand-over */
    size_t rendered_bytes;      /* JSON rendered since calls were last emitted */
    size_t dirty_calls;         /* calls marked dirty since then */
    size_t dirty_bytes;         /* their JSON rendered before they were */
    size_t out_counted;         /* of that and r->out, what inflight_bytes already holds */
    int closing;                /* last words: a retained call's image is its final one */

    /* ---- SQL thread only ---- */
    sdb *db;
    int64_t next_retry_ms;
    int logged_down;
    int txn_gen;
    int64_t run_id, run_row_gen;
    int64_t process_row, process_row_gen;
    /* runs.uuid (a run of its own) and processes.uuid: the rows found
     * again, not made twice, after a commit in doubt. */
    char run_uuid[STORE_UUID_LEN + 1], process_uuid[STORE_UUID_LEN + 1];
    struct procinfo sproc; /* the process details last written */
    char sbinary_sha[65];
    char sbinary_stat[BINARY_STAT_LEN];
    struct op *pending, **pending_tail; /* taken from ops, not yet committed */
    int64_t linger_until_ms;            /* stopping: give up on the rest after this */
    sdb_stmt *st_upsert, *st_msg;
    int64_t refused_seq;    /* gaps.seq of refused writes' gaps: -1, -2, ... */
    unsigned refused_lines; /* refused writes told in the log so far */
};

/* ---- data.c: the memory of events, calls and ops ---------------- */

/* strdup that accepts NULL (and returns NULL for it or on ENOMEM). */
char *rec_dupstr(const char *s);
/* One line for opts.log (nothing without one). */
void rec_log(recorder *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Under mu: bytes left the recorder (events freed, ops committed); wakes a
 * caller waiting for room. */
void rec_release(recorder *r, size_t bytes);
/* Free a process's details (not p itself). */
void rec_procinfo_done(struct procinfo *p);
/* Let go of what a decoded (or dropped) event owns. */
void rec_event_done(struct event *ev);
/* Drop the raw messages a call keeps for decoding again (uncounting them),
 * and stop keeping them. */
void rec_call_free_raws(recorder *r, struct call *c);
/* Free one call kept in memory with everything it owns. */
void rec_call_free(recorder *r, struct call *c);
/* Free one op / a list of ops with everything they own. Accept NULL. */
void rec_op_free(struct op *o);
void rec_op_list_free(struct op *o);

/* ---- quoted.c: a call's secrets cut out of its provider's words ----------- */

/* json (a value being redacted while c's message is rendered): when it is a
 * string long enough to be told apart from plain words, keep it to cut. */
void rec_quoted_note(struct call *c, const char *json, size_t len);
/* The message rendered into out from mark on (an answer): its diagnostics
 * and a function's error lose the secrets noted for c. */
void rec_quoted_cut_words(struct call *c, tftap_buf *out, size_t mark);
/* A provider's plain words (a status message, a decode error) without c's
 * noted secrets: a new string, or NULL for as it was. */
char *rec_quoted_without(const struct call *c, const char *s);

/* ---- the decoding stage (decode.c) and the SQL thread (sql.c) ------------- */

/* Decode one event in the caller's thread, within the bound (cost: what it
 * adds to it), and hand ops over when due. Drops (counted) what does not fit
 * or comes after close. Takes dec_mu; lets go of what ev owns. */
void rec_decode(recorder *r, struct event *ev, size_t cost);
/* The process's details or a loss were told (under nothing): fold them in
 * now (a binary's digest is read here, in the caller's thread). */
void rec_decoder_sync(recorder *r);
/* The SQL thread, with no lock held: hand over what callers decoded and
 * left (they went quiet), look for a schema another recorder wrote. Never
 * waits for a caller (skips while one decodes) nor for the SQL thread. */
void rec_decoder_idle(recorder *r);
/* Close's last words: what is still owed, then OP_END; the SQL thread is
 * told to drain and stop. Once. */
void rec_decoder_close(recorder *r);
/* The SQL thread (sql.c): applies the ops the decoder hands over
 * until sql_stop, then counts what never committed as dropped. */
void *rec_sql_main(void *arg);
/* Finalize the SQL thread's prepared statements (after it stopped). */
void rec_sql_finalize(recorder *r);

#endif
