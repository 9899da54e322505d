/* replay: private declarations of the book's pure parts, shared by
 * replay/book.c and the fuzz target (tests/fuzz/fuzz_book.c). */
#ifndef TFTAP_REPLAY_INT_H
#define TFTAP_REPLAY_INT_H

#include <stddef.h>

#include "analysis/analysis.h"
#include "common/common.h"
#include "replay/replay.h"

/* The value comparison of requests: any two secret markers equal, n
 * --ignore patterns (borrowed). */
void replay_compare_opts(analysis_value_diff_opts *o, const char *const *ignore, size_t n);

/* Walk a recorded request and a replayed one (parsed) with o, each
 * top-level field with its name as the path prefix (provider-private
 * fields left out), calling fn once per
 * differing path as analysis_value_diff does. Returns as it does. */
int replay_compare_requests(
    const analysis_value_diff_opts *o, const sj_node *rec, const sj_node *now,
    int (*fn)(void *ctx, const char *path, const sj_node *a, const sj_node *b), void *ctx);

/* replay_book_fill_sensitive's work: append to out the response with its
 * secret markers filled from plain_json (n bytes) and count them in
 * *nfilled; nothing is appended when nothing was filled (out's length is
 * restored, its bytes wiped). Returns 0, TFTAP_EDECODE, TFTAP_ELIMIT,
 * TFTAP_ENOMEM. */
int replay_fill_json(const char *rpc, const char *response_json, const char *plain_json, size_t n,
                     tftap_buf *out, size_t *nfilled);

/* How many calls the book holds (its tests). */
size_t replay_book_count(const replay_book *b);

#endif
