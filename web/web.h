/* web: `tftap serve`, the browser UI. A local HTTP server (libmicrohttpd
 * driven from a libuv loop) serving embedded pages and a paged JSON API over
 * a read-only store, guarded by a random token and a Host check, with
 * server-sent events when the database changes. Layer: may use common,
 * store and analysis.
 *
 * Ownership: the server borrows the store (the caller closes it after
 * web_server_free); strings returned live as long as the server. */
#ifndef TFTAP_WEB_H
#define TFTAP_WEB_H

#include "common/common.h"
#include "store/store.h"

typedef struct web_server web_server;

typedef struct web_opts {
    const char *db_path;   /* the database (API requests open their own read-only connection) */
    const char *listen;    /* "ADDR:PORT" ("[v6]:PORT"); NULL = "127.0.0.1:0" (a free port) */
    unsigned poll_ms;      /* how often to look for new commits; 0 = 200 */
    unsigned idle_timeout; /* seconds before an idle or slow connection is closed; 0 = 30 */
} web_opts;

/* Bind and prepare the server (nothing is served until web_server_run).
 * s (opened read only) watches for changes; opts->db_path is required.
 * Returns 0, TFTAP_EINVAL (listen is not a numeric address and port, or no db_path),
 * TFTAP_EIO (could not bind: errno set), TFTAP_ENOMEM, TFTAP_ENOLIB
 * (libmicrohttpd.so.12 could not be loaded: web_server_load_error says why). */
int web_server_new(store *s, const web_opts *opts, web_server **out);
/* Why libmicrohttpd could not be loaded (one line, names the file), or "". */
const char *web_server_load_error(void);

/* The URL to open, token included: "http://127.0.0.1:PORT/?token=HEX". */
const char *web_server_url(const web_server *w);
/* 1 when the listening address is a loopback address. */
int web_server_is_loopback(const web_server *w);

/* Serve until SIGINT or SIGTERM. Returns 0 or TFTAP_EIO. */
int web_server_run(web_server *w);

void web_server_free(web_server *w);

#endif
