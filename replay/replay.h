/* replay: a recording served as a provider (docs/replay.md). The book
 * answers each call of a replayed provider from the recorded call that
 * asked the same; the server (replay-provider) speaks the plugin protocol
 * around it. Layer: may use common, decoder, store, analysis, plugin and
 * gRPC core.
 *
 * Ownership: a book owns what its answers point to until replay_book_free;
 * a mismatch text is the caller's to free. */
#ifndef TFTAP_REPLAY_H
#define TFTAP_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "store/store.h"

/* ---- the book: recorded calls by what they asked ---------------------------- */

typedef struct replay_book replay_book;

typedef struct replay_book_opts {
    const char *const *ignore; /* --ignore PATTERNs (same syntax as tftap diff --ignore) */
    size_t n_ignore;
    /* A directory every provider process of one replay shares (NULL: none):
     * calls asked the same and answered differently are handed out across
     * the processes in recorded order (replay_book_answer). */
    const char *claims_dir;
} replay_book_opts;

/* In a claims directory: the file a process of the replay makes when it
 * answered calls that another process's recording answered, or answered
 * them from two recorded processes: the replay did not keep in step with
 * the recording, and two equal calls may have had each other's answers. */
#define REPLAY_CLAIMS_OUT_OF_STEP "out-of-step"

/* The recorded calls of one provider (every process of it) in a run, in
 * call order (calls without a decoded request are left out: nothing can
 * match them). o may be NULL; its patterns are copied. Returns 0,
 * TFTAP_ENOTFOUND (the run has no call of provider), TFTAP_ESTORE,
 * TFTAP_ENOMEM. */
int replay_book_load(store *s, int64_t run_id, const char *provider, const replay_book_opts *o,
                     replay_book **out);

typedef struct replay_answer {
    int found;                  /* 1: a recorded call matched */
    int64_t call_id;            /* the matched call, or the nearest when !found (0: none) */
    const char *response_json;  /* owned by the book; NULL when the call had none */
    int has_status;             /* 0: the recorded call never got a status (cut off) */
    int status_code;            /* the recorded gRPC status */
    const char *status_message; /* owned by the book; NULL when none */
    char *mismatch;             /* !found: names the call, the nearest recorded request and
                                   the paths where they differ; caller frees */
} replay_answer;

/* Answer a call: rpc is the method's last path element
 * ("PlanResourceChange"), type_name the request's type as the recorder
 * stores it (calls.type_name; NULL or "" when the method has none),
 * request_json the request rendered as dec_message_to_json renders it.
 *
 * A recorded call matches when it has the same rpc and type and its
 * request values are equal: unknowns by their refinements, any two
 * {"$sensitive": ...} markers equal (a bundle rehashes with another key),
 * provider-private fields (private, prior_private, planned_private,
 * source_private, target_private: the request's own fields, not
 * attributes of those names inside its values) ignored (replay sent other
 * bytes back), and paths matching an --ignore pattern ignored (a pattern
 * matches the full path, ".config.name", or the path inside the field,
 * ".name"). Of several matches the first not answered before (in recorded
 * order) wins; when all were, the last of them answers again.
 *
 * With a claims directory, a match that asked what other recorded calls
 * asked and was answered otherwise (a create given a random id, in each of
 * two test files) is answered once in the whole replay: the process that
 * answers it first claims it (a file named by its call id), the others pass
 * over it. A CLI starts the processes of one provider configuration one
 * after the other (`tofu test`: one per run block and command), so each
 * replayed process answers what its recorded twin was answered; asked
 * again, its twin's last answer. The book makes REPLAY_CLAIMS_OUT_OF_STEP
 * in the directory when that cannot hold: a replayed process takes such
 * answers from two recorded processes, or from one another replayed
 * process took them from, or answers one again that is not its twin's, or
 * the recorded processes with such calls ran at the same time (two
 * configurations of the provider). With --ignore patterns nothing is
 * claimed (requests are compared one by one, not by digest): every process
 * answers from the first, as without a directory.
 *
 * With no match, out->found is 0 and out->mismatch says which call found
 * nothing, the nearest recorded request of the same rpc and type (the
 * fewest differing paths; of equals one not answered yet, else the
 * earliest; out->call_id, 0 when there is none) and each
 * differing path with the recorded and the replayed value.
 *
 * Safe to call from several threads. Returns 0 (found or not),
 * TFTAP_EDECODE (request_json is not JSON), TFTAP_ELIMIT, TFTAP_ENOMEM. */
int replay_book_answer(replay_book *b, const char *rpc, const char *type_name,
                       const char *request_json, size_t n, replay_answer *out);

/* The secrets of a matched answer's response, from the request. A
 * recorded response holds {"$sensitive": ...} where the provider answered
 * a sensitive value; sent back as such, the CLI would find the value it
 * gave in the configuration changed (an invalid plan). plain_json is the
 * same request as replay_book_answer got, decoded without redaction; each
 * marker in the response's value (PlanResourceChange planned_state,
 * ApplyResourceChange and ReadResource new_state, ReadDataSource state,
 * UpgradeResourceState upgraded_state) takes the known value at the same
 * path of the value it derives from (proposed_new_state then config,
 * planned_state then config, current_state, config, raw_state.json).
 * Markers with nothing there stay. On success a->response_json points at
 * the filled response (owned by the book; a call without markers keeps
 * the recorded text). Nothing of plain_json is kept anywhere else, and a
 * mismatch text never holds it: only the redacted request is compared.
 * Returns 0, TFTAP_EINVAL (a not found), TFTAP_EDECODE, TFTAP_ELIMIT,
 * TFTAP_ENOMEM. */
int replay_book_fill_sensitive(replay_book *b, const char *rpc, const char *plain_json, size_t n,
                               replay_answer *a);

void replay_book_free(replay_book *b);

/* ---- server.c: the provider process tofu starts ------------------------ */

/* Bounds on one call: a request larger than this is refused with
 * RESOURCE_EXHAUSTED before it is decoded. */
#define REPLAY_MAX_MESSAGE ((size_t)256 << 20)

typedef struct replay_server_opts {
    store *s;             /* the source database, used from the serving thread only */
    int64_t run_id;       /* the source run */
    const char *provider; /* its provider address, as recorded */
    replay_book_opts book;
    char *const *envp; /* go-plugin's environment (NULL: environ) */
    int out_fd;        /* where the handshake line goes (the client reads stdout) */
    /* One line per problem worth a user's eye (a mismatch, a refused
     * call), without a newline; NULL: said nowhere. Also called from gRPC
     * core's threads (its own errors, e.g. a refused TLS handshake). */
    void (*log)(void *ctx, const char *line);
    void *log_ctx;
} replay_server_opts;

/* Serve the recording as go-plugin's provider until the client asks
 * GRPCController/Shutdown: certificate (mutual TLS when the client sent
 * PLUGIN_CLIENT_CERT), a unix socket, the handshake line for the recorded
 * protocol on out_fd, then every call answered from the book. The caller
 * checks the magic cookie first. Process-wide while serving: gRPC core is
 * initialised, its log goes to o->log, SIGTERM/SIGHUP remove the socket
 * before they end the process, and SIGPIPE is ignored. Returns 0 after a clean shutdown, or an
 * error with err saying why the server could not start (TFTAP_ENOTFOUND: the
 * run has no schema for the provider; TFTAP_EPROTO: the client offers no
 * protocol the recording speaks; TFTAP_ETLS, TFTAP_EIO, TFTAP_ENOMEM,
 * TFTAP_ESTORE, TFTAP_EDECODE). */
int replay_serve(const replay_server_opts *o, tftap_buf *err);

#endif
