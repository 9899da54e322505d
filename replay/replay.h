/* replay: a recorded run stands in for its providers (issue 12). The book
 * finds the recorded answer to a request; the server speaks go-plugin and
 * gRPC to the client and answers every call from the book.
 * Layer: may use common, decoder, store and plugin.
 *
 * Ownership: objects returned through `**out` are released with their _free
 * function (which accepts NULL); strings in answers belong to the object
 * that returned them unless a comment says the caller frees. */
#ifndef TFTAP_REPLAY_H
#define TFTAP_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "store/store.h"

/* ---- book.c: the recorded calls of one provider ------------------------- */

typedef struct replay_book replay_book;
typedef struct replay_book_opts {
    const char *const *ignore; /* --ignore PATTERNs (same syntax as tftap diff --ignore) */
    size_t n_ignore;
} replay_book_opts;
/* The recorded calls of one provider (every process of it) in a run, in call order. */
int replay_book_load(store *s, int64_t run_id, const char *provider, const replay_book_opts *o,
                     replay_book **out);
typedef struct replay_answer {
    int found;                 /* 1: a recorded call matched */
    int64_t call_id;           /* the matched call, or the nearest when !found (0: none) */
    const char *response_json; /* owned by the book; NULL when the call had none */
    int status_code;           /* the recorded gRPC status */
    const char *status_message;
    char *mismatch; /* !found: names the call, the nearest recorded request and
                       the paths where they differ; caller frees */
} replay_answer;
int replay_book_answer(replay_book *b, const char *rpc, const char *type_name,
                       const char *request_json, size_t n, replay_answer *out);
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
     * call), without a newline; NULL: said nowhere. */
    void (*log)(void *ctx, const char *line);
    void *log_ctx;
} replay_server_opts;

/* Serve the recording as go-plugin's provider until the client asks
 * GRPCController/Shutdown: certificate (mutual TLS when the client sent
 * PLUGIN_CLIENT_CERT), a unix socket, the handshake line for the recorded
 * protocol on out_fd, then every call answered from the book. The caller
 * checks the magic cookie first. Returns 0 after a clean shutdown, or an
 * error with err saying why the server could not start (TFTAP_ENOTFOUND: the
 * run has no schema for the provider; TFTAP_EPROTO: the client offers no
 * protocol the recording speaks; TFTAP_ETLS, TFTAP_EIO, TFTAP_ENOMEM,
 * TFTAP_ESTORE, TFTAP_EDECODE). */
int replay_serve(const replay_server_opts *o, tftap_buf *err);

#endif
