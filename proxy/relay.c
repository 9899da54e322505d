/* proxy: the relay. Each connection the client opens to our socket is
 * paired with one connection of ours to the provider, and the bytes of the
 * HTTP/2 session pass between the two unchanged: TLS is taken off on one
 * leg and put back on for the other, nothing else. Both peers thus speak
 * to each other directly, frame for frame (settings, flow control, pings,
 * stream ids and the HPACK state are theirs), and every gRPC method,
 * streaming kind, metadata, status, deadline and cancellation passes as
 * it was sent. The watcher (h2watch.c) reads the same bytes on the way
 * through and hands the recorder what each call carried.
 *
 * One thread and one epoll set serve every pair. Per chunk of bytes that
 * is a read on one socket, the watcher's look, and a write on the other;
 * a write that cannot finish waits in the leg's queue, and while a queue
 * holds more than RELAY_QUEUE_MAX bytes the other leg is not read (the
 * peers' HTTP/2 flow control bounds what they send meanwhile).
 *
 * Why not gRPC core's own server and channel (the first relay): per call
 * it parsed, re-framed and re-encoded what it relayed, about 200-270 us
 * per unary call on top of the direct call; this costs a few tens. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "proxy/proxy_int.h"

#define RELAY_CHUNK ((size_t)64 << 10)    /* read at most this per pass */
#define RELAY_QUEUE_MAX ((size_t)4 << 20) /* stop reading the other leg */
#define RELAY_STOP_FLUSH_MS 1000          /* writing out queues at stop */
#define RELAY_ACCEPT_RETRY_MS 250         /* out of descriptors: try accepting again */
#define RELAY_CONNECT_RETRY_MS 10         /* the provider's backlog was full */

enum src_kind { SRC_WAKE, SRC_LISTEN, SRC_LEG };

struct relay_pair;

struct relay_leg {
    enum src_kind kind; /* SRC_LEG; first, for epoll's pointer */
    struct relay_pair *pair;
    int side; /* enum proxy_h2_side of the bytes read here */
    int fd;
    SSL *ssl;             /* NULL: plaintext */
    int ready;            /* TLS handshake done (always, in plaintext) */
    int connecting;       /* the provider's leg: connect() not finished yet */
    int64_t retry_ms;     /* connecting, the provider's backlog full: try again then */
    int64_t deadline_ms;  /* not ready by then (monotonic ms): the pair closes */
    int dead;             /* closed or failed: nothing more in or out */
    int paused;           /* not read while the other leg's queue is full */
    int read_wants_write; /* SSL_read needs the socket writable */
    uint32_t events;      /* asked of epoll */
    int registered;       /* in the epoll set (taken out while nothing is asked,
                           * or a hung-up socket would wake us forever) */
    tftap_buf queue;      /* bytes for this leg not written yet */
    size_t queue_off;
};

struct relay_pair {
    proxy_relay *relay;
    struct relay_leg leg[2]; /* [PROXY_H2_FROM_CLIENT]: the client's connection */
    proxy_h2watch *watch;
    int closing; /* 1: one leg is gone: write out what the other is owed,
                  * then close; 2: closed */
    struct relay_pair *prev, *next;
};

struct proxy_relay {
    enum src_kind wake_kind;   /* SRC_WAKE */
    enum src_kind listen_kind; /* SRC_LISTEN */
    int epfd;
    int wake_fd;
    int listen_fd;
    char *listen_path;
    SSL_CTX *server_tls; /* NULL: the client's leg is plaintext */
    SSL_CTX *client_tls; /* NULL: the provider's leg is plaintext */
    struct sockaddr_storage up_addr;
    socklen_t up_addrlen;
    int spare_fd; /* a connection to the provider made at start, or -1 */
    SSL *spare_ssl;
    recorder_tee *tee;
    int notify_fd;
    struct relay_pair *pairs;
    struct relay_pair *graveyard; /* closed during this batch of events */
    atomic_uint_least64_t next_call_id;
    atomic_int open_calls;
    atomic_int draining;
    atomic_int stopping;
    int warned;
    int accept_paused;       /* out of descriptors: the listening socket is not watched */
    int64_t accept_retry_ms; /* ... until a pair closes, or this time */
    int reserve_fd;          /* held for the moment we run out (see on_accept()) */
    uint8_t *buf;            /* RELAY_CHUNK */
    pthread_t thread;
    int thread_started;
};

static void notify(proxy_relay *r)
{
    uint64_t one = 1;
    ssize_t w = write(r->notify_fd, &one, sizeof one);
    (void)w;
}

static void notify_if_idle(proxy_relay *r)
{
    if (atomic_load(&r->draining) && atomic_load(&r->open_calls) == 0)
        notify(r);
}

/* ---- the provider's address and dialing it ----------------------------- */

/* "unix" and a path, or "tcp" and host:port (numeric, as go-plugin prints). */
static int resolve(proxy_relay *r, const char *network, const char *address, tftap_buf *err)
{
    memset(&r->up_addr, 0, sizeof r->up_addr);
    if (strcmp(network, "unix") == 0) {
        struct sockaddr_un *un = (struct sockaddr_un *)&r->up_addr;
        if (strlen(address) >= sizeof un->sun_path) {
            tftap_buf_printf(err, "provider socket path too long: %s", address);
            return TFTAP_ELIMIT;
        }
        un->sun_family = AF_UNIX;
        strcpy(un->sun_path, address);
        r->up_addrlen = sizeof *un;
        return 0;
    }
    const char *colon = strrchr(address, ':');
    if (colon == NULL) {
        tftap_buf_printf(err, "provider address %s has no port", address);
        return TFTAP_EPROTO;
    }
    char host[256];
    size_t hl = (size_t)(colon - address);
    if (hl >= 2 && address[0] == '[' && address[hl - 1] == ']') {
        address++;
        hl -= 2;
    }
    if (hl == 0 || hl >= sizeof host) {
        tftap_buf_printf(err, "provider address %s is not host:port", address);
        return TFTAP_EPROTO;
    }
    memcpy(host, address, hl);
    host[hl] = '\0';
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
                             .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(host, colon + 1, &hints, &ai);
    if (rc != 0 || ai == NULL || ai->ai_addrlen > sizeof r->up_addr) {
        tftap_buf_printf(err, "provider address %s: %s", address,
                         rc != 0 ? gai_strerror(rc) : "unusable");
        if (ai != NULL)
            freeaddrinfo(ai);
        return TFTAP_EPROTO;
    }
    memcpy(&r->up_addr, ai->ai_addr, ai->ai_addrlen);
    r->up_addrlen = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

/* A connection to the provider, TLS handshake done, non-blocking. Blocks
 * the calling thread until deadline at most; the provider is local, so
 * this takes about a millisecond. */
static int dial(proxy_relay *r, int64_t deadline, int *fd_out, SSL **ssl_out, tftap_buf *err)
{
    return plugin_dial((const struct sockaddr *)&r->up_addr, r->up_addrlen, r->client_tls, deadline,
                       fd_out, ssl_out, err);
}

/* Start a connection to the provider without waiting: 0 with *fd and
 * *state (0 connected, 1 wait until writable, 2 the provider's backlog is
 * full: try again in a moment), or a negative code. Out of descriptors,
 * the reserve is given up for it (*used_reserve = 1; see on_accept()). */
static int dial_start(proxy_relay *r, int *fd_out, int *state, int *used_reserve)
{
    *fd_out = -1;
    *state = 0;
    *used_reserve = 0;
    int fd = socket(r->up_addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 && (errno == EMFILE || errno == ENFILE) && r->reserve_fd >= 0) {
        close(r->reserve_fd);
        r->reserve_fd = -1;
        *used_reserve = 1;
        fd = socket(r->up_addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    }
    if (fd < 0)
        return errno == EMFILE || errno == ENFILE ? TFTAP_ELIMIT : TFTAP_EIO;
    if (connect(fd, (struct sockaddr *)&r->up_addr, r->up_addrlen) != 0) {
        if (errno == EINPROGRESS) {
            *state = 1;
        } else if (errno == EAGAIN) {
            *state = 2;
        } else {
            close(fd);
            return TFTAP_ECHILD;
        }
    }
    if (r->up_addr.ss_family != AF_UNIX) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    *fd_out = fd;
    return 0;
}

/* ---- legs: reading, writing, epoll ------------------------------------- */

static void leg_events(struct relay_leg *l)
{
    uint32_t ev = 0;
    if (!l->dead) {
        if (l->connecting) {
            ev = l->retry_ms != 0 ? 0 : EPOLLOUT; /* writable: connected (or failed) */
        } else if (!l->ready) {
            ev = EPOLLIN; /* the handshake asks for EPOLLOUT itself */
            if (l->read_wants_write)
                ev |= EPOLLOUT;
        } else {
            /* Nothing is read before the other leg can take it. */
            if (!l->paused && !l->pair->closing && l->pair->leg[!l->side].ready)
                ev |= EPOLLIN;
            if (l->queue.len > l->queue_off || l->read_wants_write)
                ev |= EPOLLOUT;
        }
    }
    if (ev == l->events && (ev != 0) == l->registered)
        return;
    int epfd = l->pair->relay->epfd;
    struct epoll_event e = {.events = ev, .data.ptr = l};
    if (ev == 0) {
        if (l->registered && epoll_ctl(epfd, EPOLL_CTL_DEL, l->fd, NULL) == 0)
            l->registered = 0;
    } else if (epoll_ctl(epfd, l->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, l->fd, &e) == 0) {
        l->registered = 1;
    }
    l->events = ev;
}

/* Read what is there, up to cap bytes. >0: bytes; 0: nothing now; -1: the
 * connection ended or failed. *drained (may be NULL) is set when nothing
 * more is known to wait behind these bytes: epoll (level-triggered) says
 * when more comes, which saves the read() that would only fail with EAGAIN,
 * two of them per event before (about a third of the relay's system calls). */
static ssize_t leg_read(struct relay_leg *l, uint8_t *buf, size_t cap, int *drained)
{
    int ignored;
    if (drained == NULL)
        drained = &ignored;
    *drained = 0;
    if (l->ssl == NULL) {
        for (;;) {
            ssize_t n = read(l->fd, buf, cap);
            if (n > 0) {
                *drained = (size_t)n < cap;
                return n;
            }
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                return 0;
            return -1;
        }
    }
    size_t got = 0;
    l->read_wants_write = 0;
    while (got < cap) {
        int n = SSL_read(l->ssl, buf + got, (int)(cap - got));
        if (n > 0) {
            got += (size_t)n;
            /* With read-ahead (plugin_tls_*_ctx) OpenSSL holds all it
             * read from the socket: nothing held, nothing known to wait. */
            if (!SSL_has_pending(l->ssl)) {
                *drained = 1;
                break;
            }
            continue;
        }
        int e = SSL_get_error(l->ssl, n);
        if (e == SSL_ERROR_WANT_READ)
            break;
        if (e == SSL_ERROR_WANT_WRITE) {
            l->read_wants_write = 1;
            break;
        }
        ERR_clear_error();
        return got > 0 ? (ssize_t)got : -1; /* the end comes with the next read */
    }
    return (ssize_t)got;
}

/* Write what the socket takes. Bytes written, or -1 when the leg failed. */
static ssize_t leg_write(struct relay_leg *l, const uint8_t *p, size_t n)
{
    if (n == 0)
        return 0;
    if (l->ssl == NULL) {
        for (;;) {
            ssize_t w = send(l->fd, p, n, MSG_NOSIGNAL);
            if (w >= 0)
                return w;
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            return -1;
        }
    }
    size_t done = 0;
    while (done < n) {
        size_t k = n - done > INT32_MAX ? INT32_MAX : n - done;
        int w = SSL_write(l->ssl, p + done, (int)k);
        if (w > 0) {
            done += (size_t)w;
            continue;
        }
        int e = SSL_get_error(l->ssl, w);
        if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ)
            break; /* retried with the same bytes, from the queue */
        ERR_clear_error();
        return -1;
    }
    return (ssize_t)done;
}

static void leg_close(struct relay_leg *l)
{
    if (l->fd < 0)
        return;
    if (l->ssl != NULL) {
        if (l->ready && !l->dead)
            (void)SSL_shutdown(l->ssl); /* close_notify, not waiting for theirs */
        SSL_free(l->ssl);
        l->ssl = NULL;
        ERR_clear_error();
    }
    if (l->registered)
        epoll_ctl(l->pair->relay->epfd, EPOLL_CTL_DEL, l->fd, NULL);
    l->registered = 0;
    close(l->fd);
    l->fd = -1;
    l->dead = 1;
    tftap_buf_done(&l->queue);
    l->queue_off = 0;
}

static void resume_accept(proxy_relay *r);

/* Close both legs and move the pair to the graveyard: events of this batch
 * may still point at it, and see it dead. */
static void pair_free(struct relay_pair *p)
{
    proxy_relay *r = p->relay;
    if (p->closing == 2)
        return;
    if (p->watch != NULL) {
        const char *problem = proxy_h2watch_problem(p->watch);
        if (problem != NULL && !r->warned) {
            r->warned = 1;
            /* Relaying went on; the record of this connection stopped. */
            tftap_buf msg = TFTAP_BUF_INIT;
            tftap_buf_printf(&msg, "tftap: recording stopped following a connection (%s)\n",
                             problem);
            ssize_t w = write(STDERR_FILENO, msg.data, msg.len);
            (void)w;
            tftap_buf_done(&msg);
        }
        proxy_h2watch_free(p->watch, tftap_now_us());
    }
    leg_close(&p->leg[0]);
    leg_close(&p->leg[1]);
    if (p->prev != NULL)
        p->prev->next = p->next;
    else
        r->pairs = p->next;
    if (p->next != NULL)
        p->next->prev = p->prev;
    p->closing = 2;
    p->next = r->graveyard;
    r->graveyard = p;
    notify_if_idle(r);
    if (r->accept_paused || r->reserve_fd < 0)
        resume_accept(r); /* descriptors were freed */
}

static void bury(proxy_relay *r)
{
    while (r->graveyard != NULL) {
        struct relay_pair *p = r->graveyard;
        r->graveyard = p->next;
        free(p);
    }
}

/* Leg l is gone. The other leg still gets what it is owed, then the pair
 * closes. */
static void leg_gone(struct relay_leg *l)
{
    struct relay_pair *p = l->pair;
    struct relay_leg *other = &p->leg[!l->side];
    leg_close(l);
    if (other->dead || other->queue.len == other->queue_off || !other->ready) {
        pair_free(p);
        return;
    }
    p->closing = 1;
    leg_events(other);
}

static void pump(struct relay_leg *from);

/* Write out l's queue as far as the socket allows. -1: l failed (and the
 * pair may be gone). */
static int leg_flush(struct relay_leg *l)
{
    struct relay_pair *p = l->pair;
    size_t left = l->queue.len - l->queue_off;
    if (left > 0) {
        ssize_t w = leg_write(l, (const uint8_t *)l->queue.data + l->queue_off, left);
        if (w < 0) {
            leg_gone(l);
            return -1;
        }
        l->queue_off += (size_t)w;
        if (l->queue_off == l->queue.len) {
            tftap_buf_reset(&l->queue);
            l->queue_off = 0;
        }
    }
    if (p->closing && l->queue.len == 0) {
        pair_free(p);
        return -1;
    }
    leg_events(l);
    struct relay_leg *other = &p->leg[!l->side];
    if (other->paused && l->queue.len - l->queue_off <= RELAY_QUEUE_MAX) {
        other->paused = 0;
        leg_events(other);
        pump(other); /* TLS may hold bytes already read that epoll will not report */
    }
    return 0;
}

/* Send bytes to l now, queueing what the socket does not take. */
static int leg_send(struct relay_leg *l, const uint8_t *p, size_t n)
{
    if (l->queue.len == l->queue_off) {
        ssize_t w = leg_write(l, p, n);
        if (w < 0) {
            leg_gone(l);
            return -1;
        }
        p += w;
        n -= (size_t)w;
        if (n == 0)
            return 0;
    }
    tftap_buf_append(&l->queue, p, n);
    if (tftap_buf_failed(&l->queue)) {
        leg_gone(l);
        return -1;
    }
    leg_events(l);
    return 0;
}

/* Move what `from` has to the other leg, telling the watcher first. */
static void pump(struct relay_leg *from)
{
    struct relay_pair *p = from->pair;
    proxy_relay *r = p->relay;
    struct relay_leg *to = &p->leg[!from->side];
    if (p->closing || !from->ready || !to->ready)
        return;
    for (;;) {
        if (to->queue.len - to->queue_off > RELAY_QUEUE_MAX) {
            from->paused = 1;
            leg_events(from);
            return;
        }
        int drained;
        ssize_t n = leg_read(from, r->buf, RELAY_CHUNK, &drained);
        if (n < 0) {
            leg_gone(from);
            return;
        }
        if (n == 0) {
            leg_events(from);
            return;
        }
        proxy_h2watch_feed(p->watch, (enum proxy_h2_side)from->side, r->buf, (size_t)n,
                           tftap_now_us());
        if (leg_send(to, r->buf, (size_t)n) != 0)
            return;
        if (drained && !from->read_wants_write) {
            leg_events(from);
            return;
        }
    }
}

static void leg_handshake(struct relay_leg *l)
{
    int rc = SSL_do_handshake(l->ssl);
    if (rc == 1) {
        l->ready = 1;
        l->read_wants_write = 0;
        struct relay_leg *other = &l->pair->leg[!l->side];
        leg_events(l);
        leg_events(other);
        pump(l);
        if (!other->dead)
            pump(other); /* what the provider said meanwhile */
        return;
    }
    int e = SSL_get_error(l->ssl, rc);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        l->read_wants_write = e == SSL_ERROR_WANT_WRITE;
        leg_events(l);
        return;
    }
    /* A client that does not present the certificate the CLI announced
     * (or is not TLS at all) is turned away, as go-plugin's server does. */
    ERR_clear_error();
    leg_gone(l);
}

/* The provider's leg is connected: its TLS handshake next (driven by
 * epoll like the client's), or in plaintext it is ready. */
static void leg_connected(struct relay_leg *l)
{
    l->connecting = 0;
    l->retry_ms = 0;
    if (l->ssl != NULL) {
        leg_handshake(l);
        return;
    }
    l->ready = 1;
    struct relay_leg *other = &l->pair->leg[!l->side];
    leg_events(l);
    leg_events(other);
    pump(l);
    if (!other->dead)
        pump(other); /* what the client said meanwhile */
}

/* The provider's leg while connecting: writable (timer = 0) or its retry
 * time came (timer = 1). A connection that fails closes the pair, and the
 * client learns it as it would have, from a connection that ends. */
static void connect_step(struct relay_leg *l, int timer)
{
    if (!timer) {
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (getsockopt(l->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr != 0) {
            leg_gone(l);
            return;
        }
        leg_connected(l);
        return;
    }
    proxy_relay *r = l->pair->relay;
    l->retry_ms = 0;
    if (connect(l->fd, (struct sockaddr *)&r->up_addr, r->up_addrlen) == 0 || errno == EISCONN) {
        leg_connected(l);
        return;
    }
    if (errno == EAGAIN)
        l->retry_ms = tftap_mono_ms() + RELAY_CONNECT_RETRY_MS;
    else if (errno != EINPROGRESS && errno != EALREADY) {
        leg_gone(l);
        return;
    }
    leg_events(l);
}

static void on_leg(struct relay_leg *l, uint32_t ev)
{
    struct relay_pair *p = l->pair;
    if (l->dead)
        return;
    if (l->connecting) {
        if (l->retry_ms == 0)
            connect_step(l, 0);
        return;
    }
    if (!l->ready) {
        leg_handshake(l);
        return;
    }
    if (ev & EPOLLOUT) {
        if (l->read_wants_write) {
            pump(l);
            return;
        }
        if (leg_flush(l) != 0)
            return;
    }
    if ((ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !p->closing && !l->dead)
        pump(l);
}

/* ---- pairs ------------------------------------------------------------- */

/* Out of descriptors (EMFILE, ENFILE): stop watching the listening socket,
 * or a level-triggered epoll would report the waiting connection again at
 * once, forever. Connections wait in the backlog until a pair closes (its
 * descriptors are free again) or RELAY_ACCEPT_RETRY_MS passed (someone
 * else's were). One descriptor is held in reserve meanwhile, so that a
 * connection just accepted can still be dialed through. */
static void pause_accept(proxy_relay *r)
{
    if (!r->accept_paused && epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->listen_fd, NULL) == 0)
        r->accept_paused = 1;
    r->accept_retry_ms = tftap_mono_ms() + RELAY_ACCEPT_RETRY_MS;
}

static void resume_accept(proxy_relay *r)
{
    if (r->reserve_fd < 0)
        r->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (!r->accept_paused)
        return;
    struct epoll_event le = {.events = EPOLLIN, .data.ptr = &r->listen_kind};
    if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->listen_fd, &le) == 0)
        r->accept_paused = 0;
    else
        r->accept_retry_ms = tftap_mono_ms() + RELAY_ACCEPT_RETRY_MS;
}

static void on_accept(proxy_relay *r)
{
    while (!r->accept_paused) {
        int fd = accept4(r->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                pause_accept(r);
            return; /* EAGAIN, or a failure the next readiness reports again */
        }
        int up_fd = r->spare_fd;
        SSL *up_ssl = r->spare_ssl;
        int state = 0;
        r->spare_fd = -1;
        r->spare_ssl = NULL;
        int fresh = up_fd < 0;
        if (fresh) {
            /* Dialed without waiting: the connect and the TLS handshake are
             * driven by the loop, so relayed connections go on meanwhile. */
            int used_reserve = 0;
            int rc = dial_start(r, &up_fd, &state, &used_reserve);
            if (rc != 0) {
                /* The provider is gone or going (or we are out of
                 * descriptors): the client learns it the way it would
                 * have, from a connection that closes. */
                close(fd);
                if (rc == TFTAP_ELIMIT)
                    pause_accept(r);
                continue;
            }
            if (used_reserve)
                pause_accept(r); /* out of descriptors: the reserve went into this one */
        }
        struct relay_pair *p = calloc(1, sizeof *p);
        SSL *down_ssl = NULL;
        if (p == NULL ||
            proxy_h2watch_new(r->tee, &r->next_call_id, &r->open_calls, &p->watch) != 0 ||
            (r->server_tls != NULL && (down_ssl = plugin_tls_server(r->server_tls, fd)) == NULL) ||
            (fresh && r->client_tls != NULL &&
             (up_ssl = plugin_tls_client(r->client_tls, up_fd)) == NULL)) {
            if (p != NULL)
                proxy_h2watch_free(p->watch, 0);
            free(p);
            SSL_free(down_ssl);
            SSL_free(up_ssl);
            close(up_fd);
            close(fd);
            continue;
        }
        p->relay = r;
        int64_t deadline = tftap_mono_ms() + PROXY_CONNECT_TIMEOUT_MS;
        struct relay_leg *down = &p->leg[PROXY_H2_FROM_CLIENT],
                         *up = &p->leg[PROXY_H2_FROM_PROVIDER];
        *down = (struct relay_leg){.kind = SRC_LEG,
                                   .pair = p,
                                   .side = PROXY_H2_FROM_CLIENT,
                                   .fd = fd,
                                   .ssl = down_ssl,
                                   .ready = down_ssl == NULL,
                                   .deadline_ms = deadline};
        *up = (struct relay_leg){.kind = SRC_LEG,
                                 .pair = p,
                                 .side = PROXY_H2_FROM_PROVIDER,
                                 .fd = up_fd,
                                 .ssl = up_ssl,
                                 .ready = !fresh || (up_ssl == NULL && state == 0),
                                 .connecting = state != 0,
                                 .retry_ms =
                                     state == 2 ? tftap_mono_ms() + RELAY_CONNECT_RETRY_MS : 0,
                                 .deadline_ms = deadline};
        p->next = r->pairs;
        if (r->pairs != NULL)
            r->pairs->prev = p;
        r->pairs = p;
        leg_events(down);
        leg_events(up);
        if (!up->ready && !up->connecting)
            leg_handshake(up); /* connected at once: say hello */
        else if (down->ready && up->ready)
            pump(up); /* the provider may have spoken already (its SETTINGS) */
    }
}

/* Fire what is due (connect retries, handshake deadlines, accepting
 * again) and say how long epoll may sleep: -1 for as long as it likes. */
static int timers(proxy_relay *r)
{
    int64_t now = tftap_mono_ms(), next = INT64_MAX;
    if (r->accept_paused) {
        if (now >= r->accept_retry_ms)
            resume_accept(r);
        if (r->accept_paused && r->accept_retry_ms < next)
            next = r->accept_retry_ms;
    }
    for (struct relay_pair *p = r->pairs, *pn; p != NULL; p = pn) {
        pn = p->next; /* p may close below */
        for (int i = 0; i < 2 && p->closing != 2; i++) {
            struct relay_leg *l = &p->leg[i];
            if (l->dead || l->ready)
                continue;
            if (now >= l->deadline_ms) {
                leg_gone(l); /* never connected or never shook hands */
                continue;
            }
            if (l->connecting && l->retry_ms != 0 && now >= l->retry_ms)
                connect_step(l, 1);
            if (l->dead || l->ready)
                continue;
            if (l->deadline_ms < next)
                next = l->deadline_ms;
            if (l->connecting && l->retry_ms != 0 && l->retry_ms < next)
                next = l->retry_ms;
        }
    }
    if (next == INT64_MAX)
        return -1;
    return next <= now ? 0 : next - now > INT32_MAX ? INT32_MAX : (int)(next - now);
}

/* Write out every queue before closing, for at most RELAY_STOP_FLUSH_MS:
 * answers already relayed must reach the client. */
static void flush_at_stop(proxy_relay *r)
{
    int64_t deadline = tftap_mono_ms() + RELAY_STOP_FLUSH_MS;
    for (;;) {
        int waiting = 0;
        for (struct relay_pair *p = r->pairs; p != NULL; p = p->next) {
            for (int i = 0; i < 2; i++) {
                struct relay_leg *l = &p->leg[i];
                if (!l->dead && l->ready && l->queue.len > l->queue_off) {
                    ssize_t w = leg_write(l, (const uint8_t *)l->queue.data + l->queue_off,
                                          l->queue.len - l->queue_off);
                    if (w < 0)
                        l->dead = 1;
                    else
                        l->queue_off += (size_t)w;
                    if (!l->dead && l->queue.len > l->queue_off)
                        waiting = 1;
                }
            }
        }
        if (!waiting || tftap_mono_ms() >= deadline)
            return;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

static void *relay_main(void *arg)
{
    proxy_relay *r = arg;
    struct epoll_event evs[64];
    pthread_setname_np(pthread_self(), "tftap-relay"); /* for top and perf */
    while (!atomic_load(&r->stopping)) {
        int n = epoll_wait(r->epfd, evs, 64, timers(r));
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n && !atomic_load(&r->stopping); i++) {
            enum src_kind *kind = evs[i].data.ptr;
            if (*kind == SRC_WAKE) {
                uint64_t v;
                ssize_t rd = read(r->wake_fd, &v, sizeof v);
                (void)rd;
            } else if (*kind == SRC_LISTEN) {
                if (!r->accept_paused)
                    on_accept(r);
            } else {
                on_leg((struct relay_leg *)kind, evs[i].events);
            }
        }
        bury(r);
    }
    flush_at_stop(r);
    while (r->pairs != NULL)
        pair_free(r->pairs);
    bury(r);
    return NULL;
}

/* ---- the public side ----------------------------------------------------- */

static int listen_unix(proxy_relay *r, const char *path, tftap_buf *err)
{
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof un.sun_path) {
        tftap_buf_printf(err, "socket path too long: %s", path);
        return TFTAP_ELIMIT;
    }
    strcpy(un.sun_path, path);
    r->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (r->listen_fd < 0 || bind(r->listen_fd, (struct sockaddr *)&un, sizeof un) != 0 ||
        listen(r->listen_fd, 64) != 0) {
        tftap_buf_printf(err, "cannot listen on %s: %s", path, strerror(errno));
        return TFTAP_EIO;
    }
    return 0;
}

static void relay_free(proxy_relay *r)
{
    if (r->spare_ssl != NULL)
        SSL_free(r->spare_ssl);
    if (r->spare_fd >= 0)
        close(r->spare_fd);
    if (r->listen_fd >= 0)
        close(r->listen_fd);
    if (r->reserve_fd >= 0)
        close(r->reserve_fd);
    if (r->wake_fd >= 0)
        close(r->wake_fd);
    if (r->epfd >= 0)
        close(r->epfd);
    free(r->listen_path);
    free(r->buf);
    free(r);
}

int proxy_relay_start(const proxy_relay_opts *o, int connect_timeout_ms, proxy_relay **out,
                      tftap_buf *err)
{
    *out = NULL;
    proxy_relay *r = calloc(1, sizeof *r);
    if (r == NULL)
        return TFTAP_ENOMEM;
    r->wake_kind = SRC_WAKE;
    r->listen_kind = SRC_LISTEN;
    r->epfd = r->wake_fd = r->listen_fd = r->spare_fd = -1;
    r->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    r->server_tls = o->server_tls;
    r->client_tls = o->client_tls;
    r->tee = o->tee;
    r->notify_fd = o->notify_fd;
    r->buf = malloc(RELAY_CHUNK);
    r->listen_path = strdup(o->listen_path);
    tftap_buf why = TFTAP_BUF_INIT;
    int rc = TFTAP_ENOMEM;
    if (r->buf == NULL || r->listen_path == NULL)
        goto fail;
    rc = resolve(r, o->upstream_network, o->upstream_address, &why);
    if (rc != 0)
        goto fail;
    /* The provider must answer before we announce ourselves: dial it now,
     * and give this connection to the client's first. */
    rc = dial(r, tftap_mono_ms() + connect_timeout_ms, &r->spare_fd, &r->spare_ssl, &why);
    if (rc != 0)
        goto fail;
    rc = listen_unix(r, o->listen_path, &why);
    if (rc != 0)
        goto fail;
    r->epfd = epoll_create1(EPOLL_CLOEXEC);
    r->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event we = {.events = EPOLLIN, .data.ptr = &r->wake_kind};
    struct epoll_event le = {.events = EPOLLIN, .data.ptr = &r->listen_kind};
    rc = TFTAP_EIO;
    if (r->epfd < 0 || r->wake_fd < 0 || epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->wake_fd, &we) != 0 ||
        epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->listen_fd, &le) != 0) {
        tftap_buf_printf(&why, "epoll: %s", strerror(errno));
        goto fail;
    }
    if (pthread_create(&r->thread, NULL, relay_main, r) != 0) {
        tftap_buf_puts(&why, "cannot start the relay thread");
        goto fail;
    }
    r->thread_started = 1;
    tftap_buf_done(&why);
    *out = r;
    return 0;

fail:
    if (err != NULL)
        tftap_buf_puts(err, why.len > 0 ? tftap_buf_cstr(&why) : "out of memory");
    tftap_buf_done(&why);
    relay_free(r);
    return rc;
}

void proxy_relay_drain(proxy_relay *r)
{
    atomic_store(&r->draining, 1);
    notify_if_idle(r);
}

int proxy_relay_active(proxy_relay *r)
{
    return atomic_load(&r->open_calls);
}

void proxy_relay_stop(proxy_relay *r)
{
    if (r == NULL)
        return;
    if (r->thread_started) {
        atomic_store(&r->stopping, 1);
        uint64_t one = 1;
        ssize_t w = write(r->wake_fd, &one, sizeof one);
        (void)w;
        pthread_join(r->thread, NULL);
    }
    relay_free(r);
}

/* ---- Shutdown, when the client can no longer send it -------------------- */

/* The Shutdown call's bytes into its watcher, as the relay's own calls'. */
static void shutdown_seen(void *ctx, int from_server, const uint8_t *p, size_t n)
{
    proxy_h2watch_feed(ctx, from_server ? PROXY_H2_FROM_PROVIDER : PROXY_H2_FROM_CLIENT, p, n,
                       tftap_now_us());
}

int proxy_relay_shutdown_provider(proxy_relay *r, int timeout_ms)
{
    int64_t deadline = tftap_mono_ms() + timeout_ms;
    int fd;
    SSL *ssl;
    tftap_buf why = TFTAP_BUF_INIT, resp = TFTAP_BUF_INIT;
    int rc = dial(r, deadline, &fd, &ssl, &why);
    if (rc != 0) {
        tftap_buf_done(&why);
        return TFTAP_ECHILD;
    }
    /* The call is recorded like one the client made: its bytes go through
     * a watcher of their own (a watcher that fails to start records less,
     * never stops the call). */
    proxy_h2watch *watch = NULL;
    (void)proxy_h2watch_new(r->tee, &r->next_call_id, &r->open_calls, &watch);
    int64_t left = deadline - tftap_mono_ms();
    rc = plugin_unary_call(fd, ssl, "/plugin.GRPCController/Shutdown", "", 0, 1024,
                           left > 0 ? (int)left : 0, watch ? shutdown_seen : NULL, watch, &resp,
                           &why);
    proxy_h2watch_free(watch, tftap_now_us());
    if (ssl != NULL)
        SSL_free(ssl);
    close(fd);
    tftap_buf_done(&resp);
    tftap_buf_done(&why);
    return rc == 0 ? 0 : TFTAP_ECHILD;
}
