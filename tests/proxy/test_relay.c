/* The relay (proxy/relay.c) between a client and a "provider" of the
 * test's own, both on unix sockets: bytes are relayed as they are (an echo
 * provider answers them), so no HTTP/2 is needed to test what the relay
 * does with descriptors and dialing:
 *
 * - out of descriptors (RLIMIT_NOFILE lowered to what is open), a waiting
 *   connection does not make the relay thread spin, and it is served once
 *   descriptors are back;
 * - a provider that accepts a connection and never answers its TLS
 *   handshake does not stall a connection already relayed. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "proxy/proxy_int.h"
#include "tests/check.h"

#define WAIT_MS 60000 /* generous bound on anything that should happen */

static char dir[256], up_path[300], our_path[300];

static int listen_on(const char *path)
{
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    size_t n = strlen(path);
    if (n >= sizeof un.sun_path) {
        fprintf(stderr, "socket path too long: %s\n", path);
        exit(1);
    }
    memcpy(un.sun_path, path, n + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&un, sizeof un) != 0 || listen(fd, 16) != 0) {
        perror("listen");
        exit(1);
    }
    return fd;
}

static int connect_to(const char *path)
{
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    size_t n = strlen(path);
    if (n >= sizeof un.sun_path) {
        fprintf(stderr, "socket path too long: %s\n", path);
        exit(1);
    }
    memcpy(un.sun_path, path, n + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&un, sizeof un) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* Send a line and wait (at most WAIT_MS) for it to come back. 0 when it did. */
static int echo_round(int fd, const char *msg)
{
    size_t n = strlen(msg);
    if (write(fd, msg, n) != (ssize_t)n)
        return -1;
    char buf[256];
    size_t got = 0;
    while (got < n) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, WAIT_MS) != 1)
            return -1;
        ssize_t r = read(fd, buf + got, sizeof buf - got);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return got == n && memcmp(buf, msg, n) == 0 ? 0 : -1;
}

/* ---- an echo provider in plaintext ------------------------------------- */

struct echo {
    int listen_fd;
    int stop_fd;     /* eventfd */
    int accepted[2]; /* a pipe: a byte for each connection accepted */
};

static void *echo_main(void *arg)
{
    struct echo *e = arg;
    struct pollfd fds[64];
    int n = 2;
    fds[0] = (struct pollfd){e->listen_fd, POLLIN, 0};
    fds[1] = (struct pollfd){e->stop_fd, POLLIN, 0};
    for (;;) {
        if (poll(fds, (nfds_t)n, -1) < 0 && errno != EINTR)
            break;
        if (fds[1].revents)
            break;
        if ((fds[0].revents & POLLIN) && n < 64) {
            int c = accept4(e->listen_fd, NULL, NULL, SOCK_CLOEXEC);
            if (c >= 0) {
                fds[n++] = (struct pollfd){c, POLLIN, 0};
                if (write(e->accepted[1], "a", 1) != 1)
                    break;
            }
        }
        for (int i = 2; i < n; i++) {
            if (!fds[i].revents)
                continue;
            char buf[4096];
            ssize_t r = read(fds[i].fd, buf, sizeof buf);
            if (r <= 0 || write(fds[i].fd, buf, (size_t)r) != r) {
                close(fds[i].fd);
                fds[i--] = fds[--n];
            }
        }
    }
    for (int i = 2; i < n; i++)
        close(fds[i].fd);
    return NULL;
}

/* The lowest free descriptor number: with RLIMIT_NOFILE at it, no new
 * descriptor can be made (the limit is on numbers, not on a count). */
static int lowest_free_fd(void)
{
    int fd = dup(0);
    if (fd >= 0)
        close(fd);
    return fd;
}

static int64_t cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec +
           ru.ru_stime.tv_usec;
}

static void test_out_of_descriptors(void)
{
    unlink(up_path);
    unlink(our_path);
    struct echo e = {listen_on(up_path), eventfd(0, EFD_CLOEXEC), {-1, -1}};
    CHECK_INT_EQ(pipe2(e.accepted, O_CLOEXEC), 0);
    pthread_t th;
    CHECK_INT_EQ(pthread_create(&th, NULL, echo_main, &e), 0);
    int notify = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    proxy_relay_opts o = {.listen_path = our_path,
                          .upstream_network = "unix",
                          .upstream_address = up_path,
                          .notify_fd = notify};
    proxy_relay *r = NULL;
    tftap_buf err = TFTAP_BUF_INIT;
    CHECK_INT_EQ(proxy_relay_start(&o, 10000, &r, &err), 0);
    tftap_buf_done(&err);

    /* The client is another process: ours is about to have no descriptor
     * to spare. */
    int go[2], said[2];
    CHECK_INT_EQ(pipe2(go, O_CLOEXEC), 0);
    CHECK_INT_EQ(pipe2(said, O_CLOEXEC), 0);
    pid_t pid = fork();
    if (pid == 0) {
        char c;
        if (read(go[0], &c, 1) != 1)
            _exit(2);
        int fd = connect_to(our_path); /* lands in the backlog */
        if (fd < 0 || write(said[1], "c", 1) != 1)
            _exit(3);
        _exit(echo_round(fd, "ping\n") == 0 ? 0 : 1);
    }
    /* The provider has accepted the relay's connection made at start (or
     * it would be the one out of descriptors). */
    char a = 0;
    CHECK_INT_EQ(read(e.accepted[0], &a, 1), 1);
    struct rlimit old;
    getrlimit(RLIMIT_NOFILE, &old);
    struct rlimit low = old;
    low.rlim_cur = (rlim_t)lowest_free_fd();
    CHECK_INT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
    CHECK_INT_EQ(write(go[1], "g", 1), 1);
    char c = 0;
    CHECK_INT_EQ(read(said[0], &c, 1), 1);
    /* A connection is waiting and accept() fails with EMFILE. The window
     * measured is CPU time, not a wait for something: a relay thread that
     * spins burns a good part of it even on a loaded machine. */
    int64_t cpu0 = cpu_us();
    struct timespec window = {2, 0};
    nanosleep(&window, NULL);
    int64_t used = cpu_us() - cpu0;
    if (used >= 100000)
        fprintf(stderr, "relay used %lld us of CPU in 2 s out of descriptors\n", (long long)used);
    CHECK(used < 100000);
    /* Descriptors are back: the waiting client is served. */
    CHECK_INT_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
    int status = -1;
    CHECK_INT_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    proxy_relay_stop(r);
    uint64_t one = 1;
    CHECK_INT_EQ(write(e.stop_fd, &one, sizeof one), (ssize_t)sizeof one);
    pthread_join(th, NULL);
    close(e.listen_fd);
    close(e.stop_fd);
    close(e.accepted[0]);
    close(e.accepted[1]);
    close(notify);
    close(go[0]);
    close(go[1]);
    close(said[0]);
    close(said[1]);
}

/* ---- a provider that answers one TLS handshake and stalls the next ----- */

struct tls_prov {
    int listen_fd;
    SSL_CTX *ctx;
    int held_fd; /* the connection it never answers */
    int accepted_second;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

static void *tls_echo_main(void *arg)
{
    SSL *ssl = arg;
    char buf[4096];
    for (;;) {
        int n = SSL_read(ssl, buf, sizeof buf);
        if (n <= 0 || SSL_write(ssl, buf, n) != n)
            break;
    }
    return NULL;
}

static void *tls_prov_main(void *arg)
{
    struct tls_prov *t = arg;
    int fd = accept4(t->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    SSL *ssl = fd >= 0 ? SSL_new(t->ctx) : NULL;
    if (ssl == NULL || !SSL_set_fd(ssl, fd) || SSL_accept(ssl) != 1)
        return NULL;
    pthread_t echo;
    if (pthread_create(&echo, NULL, tls_echo_main, ssl) != 0)
        return NULL;
    int second = accept4(t->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    pthread_mutex_lock(&t->mu);
    t->held_fd = second;
    t->accepted_second = 1;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(echo, NULL);
    SSL_free(ssl);
    close(fd);
    return NULL;
}

static void test_dial_does_not_stall(void)
{
    unlink(up_path);
    unlink(our_path);
    plugin_cert ours = {0}, theirs = {0};
    CHECK_INT_EQ(plugin_cert_make(&ours), 0);
    CHECK_INT_EQ(plugin_cert_make(&theirs), 0);
    tftap_buf err = TFTAP_BUF_INIT;
    SSL_CTX *prov_ctx = NULL, *client_ctx = NULL;
    CHECK_INT_EQ(plugin_tls_server_ctx(&theirs, ours.cert_pem, &prov_ctx, &err), 0);
    CHECK_INT_EQ(plugin_tls_client_ctx(&ours, theirs.cert_pem, &client_ctx, &err), 0);
    struct tls_prov t = {.listen_fd = listen_on(up_path), .ctx = prov_ctx, .held_fd = -1};
    pthread_mutex_init(&t.mu, NULL);
    pthread_cond_init(&t.cv, NULL);
    pthread_t th;
    CHECK_INT_EQ(pthread_create(&th, NULL, tls_prov_main, &t), 0);

    int notify = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    proxy_relay_opts o = {.listen_path = our_path,
                          .upstream_network = "unix",
                          .upstream_address = up_path,
                          .client_tls = client_ctx,
                          .notify_fd = notify};
    proxy_relay *r = NULL;
    CHECK_INT_EQ(proxy_relay_start(&o, 10000, &r, &err), 0);
    if (err.len > 0)
        fprintf(stderr, "relay: %s\n", tftap_buf_cstr(&err));

    /* A: the connection dialed at start, relayed. */
    int a = connect_to(our_path);
    CHECK(a >= 0);
    CHECK_INT_EQ(echo_round(a, "first\n"), 0);
    /* B: its dial reaches a provider that never finishes the handshake. */
    int b = connect_to(our_path);
    CHECK(b >= 0);
    pthread_mutex_lock(&t.mu);
    while (!t.accepted_second)
        pthread_cond_wait(&t.cv, &t.mu);
    pthread_mutex_unlock(&t.mu);
    /* A is still relayed while B's handshake hangs (a relay that dialed
     * in its own thread would answer A only once B's dial gave up, and
     * closed B). */
    CHECK_INT_EQ(echo_round(a, "second\n"), 0);
    struct pollfd pb = {b, POLLIN, 0};
    CHECK_INT_EQ(poll(&pb, 1, 0), 0); /* B: nothing yet, not closed */

    proxy_relay_stop(r);
    close(a);
    close(b);
    pthread_join(th, NULL);
    if (t.held_fd >= 0)
        close(t.held_fd);
    close(t.listen_fd);
    close(notify);
    SSL_CTX_free(prov_ctx);
    SSL_CTX_free(client_ctx);
    plugin_cert_done(&ours);
    plugin_cert_done(&theirs);
    tftap_buf_done(&err);
    pthread_cond_destroy(&t.cv);
    pthread_mutex_destroy(&t.mu);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    snprintf(dir, sizeof dir, "%s/tftap-test-relay-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(up_path, sizeof up_path, "%s/up.sock", dir);
    snprintf(our_path, sizeof our_path, "%s/our.sock", dir);
    /* valgrind emulates RLIMIT_NOFILE by closing what a system call
     * returned past it, so there an accept() over the limit loses the
     * connection the kernel would have left waiting: not the case tested.
     * Said, not silent; the plain and sanitizer builds run it. */
    const char *preload = getenv("LD_PRELOAD");
    if (preload != NULL && strstr(preload, "vgpreload") != NULL)
        printf("SKIPPED: out of descriptors: under valgrind, which emulates RLIMIT_NOFILE\n");
    else
        test_out_of_descriptors();
    test_dial_does_not_stall();
    unlink(up_path);
    unlink(our_path);
    rmdir(dir);
    return check_report("test_relay");
}
