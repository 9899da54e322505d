/* Unit tests of the proxy's pieces that need no peer: go-plugin handshake
 * lines, the certificates we make (checked with OpenSSL against what
 * go-plugin's own look like), the child's environment, shim metadata, and
 * the tee's bound under a flood, read back through the recorder pipe's
 * reader. */
#include "config.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "proxy/proxy_int.h"
#include "tests/check.h"

static void test_handshake(void)
{
    plugin_handshake hs;
    tftap_buf err = TFTAP_BUF_INIT;
    const char *cert =
        "MIICLDCCAY6gAwIBAgIRAKexampleexampleexampleexampleexampleexampleexampleexample";

    /* A provider with automatic mTLS, as go-plugin prints it. */
    char line[512];
    snprintf(line, sizeof line, "1|6|unix|/tmp/plugin123|grpc|%s\n", cert);
    CHECK_INT_EQ(plugin_handshake_parse(line, strlen(line), &hs, &err), 0);
    CHECK_INT_EQ(hs.core_version, 1);
    CHECK_INT_EQ(hs.proto_version, 6);
    CHECK_STR_EQ(hs.network, "unix");
    CHECK_STR_EQ(hs.address, "/tmp/plugin123");
    CHECK_STR_EQ(hs.protocol, "grpc");
    CHECK_STR_EQ(hs.cert_b64, cert);
    CHECK_STR_EQ(hs.extra, "");
    plugin_handshake_done(&hs);

    /* Plaintext: an empty sixth field, or none at all. */
    CHECK_INT_EQ(plugin_handshake_parse("1|5|unix|/tmp/p|grpc|", 21, &hs, &err), 0);
    CHECK_STR_EQ(hs.cert_b64, "");
    plugin_handshake_done(&hs);
    CHECK_INT_EQ(plugin_handshake_parse("1|5|tcp|127.0.0.1:1234|grpc", 27, &hs, &err), 0);
    CHECK_STR_EQ(hs.network, "tcp");
    CHECK_STR_EQ(hs.address, "127.0.0.1:1234");
    CHECK_STR_EQ(hs.cert_b64, "");
    plugin_handshake_done(&hs);

    /* go-plugin ignores a cert field of 50 characters or fewer. */
    CHECK_INT_EQ(plugin_handshake_parse("1|5|unix|/p|grpc|short\r\n", 24, &hs, &err), 0);
    CHECK_STR_EQ(hs.cert_b64, "");
    plugin_handshake_done(&hs);

    /* Fields after the certificate (broker multiplexing) pass through. */
    snprintf(line, sizeof line, "1|6|unix|/p|grpc|%s|true", cert);
    CHECK_INT_EQ(plugin_handshake_parse(line, strlen(line), &hs, &err), 0);
    CHECK_STR_EQ(hs.extra, "true");
    plugin_handshake_done(&hs);

    /* Refused: wrong core version, net/rpc, odd networks, too few fields,
     * non-numeric versions, NUL bytes, empty address. */
    static const char *const bad[] = {"2|5|unix|/p|grpc|",
                                      "1|5|unix|/p|netrpc|",
                                      "1|5|udp|/p|grpc|",
                                      "1|5|unix|/p",
                                      "1|x|unix|/p|grpc|",
                                      "1|-5|unix|/p|grpc|",
                                      "1|5|unix||grpc|",
                                      "",
                                      "|||||",
                                      "1|99999999|unix|/p|grpc|"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tftap_buf_reset(&err);
        int rc = plugin_handshake_parse(bad[i], strlen(bad[i]), &hs, &err);
        CHECK_INT_EQ(rc, TFTAP_EPROTO);
        CHECK(err.len > 0);
        if (rc == 0)
            plugin_handshake_done(&hs);
    }
    char nul[] = "1|5|unix|/p\0x|grpc|";
    CHECK_INT_EQ(plugin_handshake_parse(nul, sizeof nul - 1, &hs, &err), TFTAP_EPROTO);
    tftap_buf_done(&err);
}

static int has_eku(X509 *x, int nid)
{
    EXTENDED_KEY_USAGE *eku = X509_get_ext_d2i(x, NID_ext_key_usage, NULL, NULL);
    int found = 0;
    for (int i = 0; eku != NULL && i < sk_ASN1_OBJECT_num(eku); i++)
        if (OBJ_obj2nid(sk_ASN1_OBJECT_value(eku, i)) == nid)
            found = 1;
    EXTENDED_KEY_USAGE_free(eku);
    return found;
}

static void test_cert(void)
{
    plugin_cert a, b;
    CHECK_INT_EQ(plugin_cert_make(&a), 0);
    CHECK_INT_EQ(plugin_cert_make(&b), 0);
    CHECK(strncmp(a.cert_pem, "-----BEGIN CERTIFICATE-----", 27) == 0);
    CHECK(strstr(a.key_pem, "PRIVATE KEY") != NULL);
    CHECK(strcmp(a.der_b64, b.der_b64) != 0); /* fresh each time */
    /* Unpadded standard base64, on one line (go-plugin's RawStdEncoding). */
    CHECK(strchr(a.der_b64, '=') == NULL);
    CHECK(strchr(a.der_b64, '\n') == NULL);
    CHECK(strlen(a.der_b64) > 50);

    BIO *bio = BIO_new_mem_buf(a.cert_pem, -1);
    X509 *x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    BIO_free(bio);
    CHECK(x != NULL);
    if (x != NULL) {
        /* What go-plugin's peers rely on: a self-signed CA for localhost,
         * usable as server and client, for about 30 years; P-256, whose
         * signatures cost a tenth of go-plugin's P-521. */
        CHECK_INT_EQ(X509_check_host(x, "localhost", 0, 0, NULL), 1);
        char cn[64] = "";
        X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof cn);
        CHECK_STR_EQ(cn, "localhost");
        CHECK_INT_EQ(X509_check_ca(x) >= 1, 1);
        uint32_t ku = X509_get_key_usage(x);
        CHECK(ku & KU_KEY_CERT_SIGN);
        CHECK(ku & KU_DIGITAL_SIGNATURE);
        CHECK(has_eku(x, NID_server_auth));
        CHECK(has_eku(x, NID_client_auth));
        EVP_PKEY *pub = X509_get0_pubkey(x);
        char group[64] = "";
        size_t glen = 0;
        CHECK(pub != NULL &&
              EVP_PKEY_get_utf8_string_param(pub, "group", group, sizeof group, &glen) == 1);
        CHECK_STR_EQ(group, "prime256v1");
        CHECK_INT_EQ(X509_verify(x, pub), 1); /* self-signed */
        int days = 0, secs = 0;
        CHECK(ASN1_TIME_diff(&days, &secs, X509_get0_notBefore(x), X509_get0_notAfter(x)) == 1);
        CHECK(days > 365 * 29 && days < 365 * 31);

        /* The handshake form decodes back to the same certificate. */
        char *pem = NULL;
        CHECK_INT_EQ(plugin_cert_b64der_to_pem(a.der_b64, strlen(a.der_b64), &pem), 0);
        CHECK_STR_EQ(pem, a.cert_pem);
        free(pem);
        X509_free(x);
    }
    char *pem = NULL;
    CHECK_INT_EQ(plugin_cert_b64der_to_pem("bm90IGEgY2VydGlmaWNhdGU", 23, &pem), TFTAP_EDECODE);
    CHECK_INT_EQ(plugin_cert_b64der_to_pem("!!!!", 4, &pem), TFTAP_EDECODE);
    CHECK(pem == NULL);
    plugin_cert_done(&a);
    plugin_cert_done(&b);
}

static void test_env(void)
{
    char *env[] = {"PATH=/bin", "PLUGIN_CLIENT_CERT=theirs",
                   "TF_PLUGIN_MAGIC_COOKIE=" PLUGIN_COOKIE_VALUE, "PLUGIN_CLIENT_CERTX=keep", NULL};
    CHECK(plugin_cookie_ok(env));
    char *wrong[] = {"TF_PLUGIN_MAGIC_COOKIE=nope", NULL};
    CHECK(!plugin_cookie_ok(wrong));
    char *none[] = {NULL};
    CHECK(!plugin_cookie_ok(none));
    CHECK_STR_EQ(plugin_env_get(env, "PLUGIN_CLIENT_CERT"), "theirs");
    CHECK(plugin_env_get(env, "PLUGIN") == NULL);

    /* The child gets our certificate in place of the client's... */
    char **child = plugin_env_for_child(env, "ours", NULL);
    CHECK(child != NULL);
    if (child != NULL) {
        CHECK_STR_EQ(plugin_env_get(child, "PLUGIN_CLIENT_CERT"), "ours");
        CHECK_STR_EQ(plugin_env_get(child, "PLUGIN_CLIENT_CERTX"), "keep");
        CHECK_STR_EQ(plugin_env_get(child, "PATH"), "/bin");
        int n = 0;
        for (char **e = child; *e != NULL; e++)
            n += strncmp(*e, "PLUGIN_CLIENT_CERT=", 19) == 0;
        CHECK_INT_EQ(n, 1);
        free(child);
    }
    /* ...or none at all: a plaintext child leg. */
    child = plugin_env_for_child(env, NULL, NULL);
    CHECK(child != NULL && plugin_env_get(child, "PLUGIN_CLIENT_CERT") == NULL);
    CHECK(child != NULL && plugin_env_get(child, "PLUGIN_UNIX_SOCKET_DIR") == NULL);
    free(child);
    /* A plaintext leg in a directory of ours, in place of the client's. */
    char *with_dir[] = {"PLUGIN_UNIX_SOCKET_DIR=/theirs", "PATH=/bin", "PLUGIN_CLIENT_CERT=theirs",
                        NULL};
    child = plugin_env_for_child(with_dir, NULL, "/tmp/ours");
    CHECK(child != NULL);
    if (child != NULL) {
        CHECK_STR_EQ(plugin_env_get(child, "PLUGIN_UNIX_SOCKET_DIR"), "/tmp/ours");
        CHECK(plugin_env_get(child, "PLUGIN_CLIENT_CERT") == NULL);
        CHECK_STR_EQ(plugin_env_get(child, "PATH"), "/bin");
        int n = 0;
        for (char **e = child; *e != NULL; e++)
            n++;
        CHECK_INT_EQ(n, 2);
        free(child);
    }
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fputs(text, f);
    return fclose(f);
}

static void test_meta(void)
{
    char dir[] = "/tmp/tftap-test-meta.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/tftap-shim.json", dir);
    proxy_meta m;
    tftap_buf err = TFTAP_BUF_INIT;

    CHECK_INT_EQ(write_file(path, "{\"provider\": \"registry.opentofu.org/hashicorp/random\", "
                                  "\"version\": \"3.6.0\", "
                                  "\"binary\": \"/x/terraform-provider-random\", "
                                  "\"db\": \"/x/.tftap/tftap.db\", \"record_sensitive\": true, "
                                  "\"keep_raw\": false}"),
                 0);
    CHECK_INT_EQ(proxy_meta_load(path, &m, &err), 0);
    CHECK_STR_EQ(m.provider, "registry.opentofu.org/hashicorp/random");
    CHECK_STR_EQ(m.version, "3.6.0");
    CHECK_STR_EQ(m.binary, "/x/terraform-provider-random");
    CHECK_STR_EQ(m.db, "/x/.tftap/tftap.db");
    CHECK_INT_EQ(m.record_sensitive, 1);
    CHECK_INT_EQ(m.keep_raw, 0);
    proxy_meta_done(&m);

    /* version, db and the flags are optional. */
    CHECK_INT_EQ(write_file(path, "{\"provider\": \"p\", \"binary\": \"/b\"}"), 0);
    CHECK_INT_EQ(proxy_meta_load(path, &m, &err), 0);
    CHECK(m.version == NULL && m.db == NULL && m.record_sensitive == 0);
    proxy_meta_done(&m);

    static const char *const bad[] = {"{\"binary\": \"/b\"}",
                                      "{\"provider\": \"p\"}",
                                      "{\"provider\": 1, \"binary\": \"/b\"}",
                                      "{\"provider\": \"p\", \"binary\": \"/b\", \"keep_raw\": 1}",
                                      "[]",
                                      "{"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tftap_buf_reset(&err);
        CHECK_INT_EQ(write_file(path, bad[i]), 0);
        CHECK_INT_EQ(proxy_meta_load(path, &m, &err), TFTAP_EDECODE);
        CHECK(err.len > 0);
        CHECK(m.provider == NULL && m.binary == NULL);
    }
    unlink(path);
    CHECK(proxy_meta_load(path, &m, &err) == TFTAP_EIO);
    rmdir(dir);
    tftap_buf_done(&err);
}

/* ---- the tee under a flood ---------------------------------------------- */

struct counts {
    int fd;
    uint64_t process, begins, messages, ends, lost, dropped, large, spill_failed, spilled;
    char spill_name[64];
};

static void c_process(void *ctx, const char *p, const char *v, const char *b, int proto, int pid)
{
    (void)p, (void)v, (void)b, (void)proto, (void)pid;
    ((struct counts *)ctx)->process++;
}
static void c_begin(void *ctx, uint64_t id, const char *m, int64_t t)
{
    (void)id, (void)m, (void)t;
    ((struct counts *)ctx)->begins++;
}
static void c_message(void *ctx, uint64_t id, enum recorder_direction d, int64_t t, uint8_t *b,
                      size_t n)
{
    (void)id, (void)d, (void)t, (void)n;
    free(b);
    ((struct counts *)ctx)->messages++;
}
static void c_end(void *ctx, uint64_t id, int64_t t, int st, const char *m)
{
    (void)id, (void)t, (void)st, (void)m;
    ((struct counts *)ctx)->ends++;
}
static void c_lost(void *ctx, uint64_t n, enum recorder_lost why)
{
    struct counts *c = ctx;
    if (why == RECORDER_LOST_QUEUE_FULL)
        c->dropped += n;
    else if (why == RECORDER_LOST_TOO_LARGE)
        c->large += n;
    else if (why == RECORDER_LOST_SPILL_FAILED)
        c->spill_failed += n;
    else
        c->lost += n;
}
static void c_spilled(void *ctx, uint64_t id, enum recorder_direction d, int64_t t,
                      const char *name)
{
    struct counts *c = ctx;
    (void)id, (void)t;
    CHECK_INT_EQ(d, RECORDER_RESPONSE);
    snprintf(c->spill_name, sizeof c->spill_name, "%s", name);
    c->spilled++;
}

static void *reader(void *arg)
{
    struct counts *c = arg;
    recorder_pipe_sink sink = {c,      c_process, c_begin, c_message, c_end,
                               c_lost, NULL,      NULL,    c_spilled};
    (void)recorder_pipe_read(c->fd, RECORDER_MESSAGE_MAX, &sink);
    return NULL;
}

/* Nobody reads the pipe while a flood of calls is queued: the tee's queue
 * stays within its bound, the messages past it are dropped and counted
 * (and the count reaches the recorder, whose gap it becomes), and every
 * call still begins and ends (the reserve), as read back. */
static void test_tee_flood(void)
{
    int p[2];
    CHECK_INT_EQ(pipe(p), 0);
    const size_t bound = (size_t)1 << 20, msg = (size_t)64 << 10;
    const uint64_t calls = 200;
    recorder_tee *t = NULL;
    CHECK_INT_EQ(recorder_tee_new(p[1], bound, &t), 0);
    recorder_tee_process(t, "registry/test/x", "1.0", "/bin/x", 5, 1);
    for (uint64_t i = 1; i <= calls; i++) {
        recorder_tee_begin(t, i, "/tfplugin5.Provider/PlanResourceChange", 1000);
        uint8_t *m = calloc(1, msg);
        recorder_tee_message(t, i, RECORDER_REQUEST, 1001, m, msg);
        recorder_tee_end(t, i, 1002, 0, "");
    }
    size_t peak = recorder_tee_peak_bytes(t);
    uint64_t dropped = recorder_tee_dropped(t);
    CHECK(peak <= bound);
    CHECK(peak > bound / 2); /* it was full, else this tested nothing */
    CHECK(dropped > 0);
    struct counts c = {.fd = p[0]};
    pthread_t th;
    CHECK_INT_EQ(pthread_create(&th, NULL, reader, &c), 0);
    recorder_tee_free(t);
    close(p[1]);
    pthread_join(th, NULL);
    close(p[0]);
    CHECK_INT_EQ(c.process, 1);
    CHECK_INT_EQ(c.begins, calls);
    CHECK_INT_EQ(c.ends, calls);
    CHECK_INT_EQ(c.messages + dropped, calls);
    CHECK_INT_EQ(c.dropped, dropped); /* told to the recorder: its gap */
    CHECK_INT_EQ(c.lost, 0);
}

/* Big messages go into spill files the recorder reads: the file holds the
 * message, its name reaches the reader; what could not be spilled is
 * counted lost with its reason; a spill dir that is not private is not
 * used; a broken pipe leaves no file behind. */
static void test_tee_spill(void)
{
    char dir[] = "/tmp/tftap-test-spill-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char spill[64], open_dir[64];
    snprintf(spill, sizeof spill, "%s/spill", dir);
    snprintf(open_dir, sizeof open_dir, "%s/open", dir);
    int p[2];
    CHECK_INT_EQ(pipe(p), 0);
    recorder_tee *t = NULL;
    CHECK_INT_EQ(recorder_tee_new(p[1], (size_t)1 << 20, &t), 0);
    recorder_tee_spill_to(t, spill);
    recorder_tee_begin(t, 1, "/tfplugin5.Provider/ReadResource", 1000);
    recorder_spill sp;
    CHECK_INT_EQ(recorder_tee_spill_open(t, 1, RECORDER_RESPONSE, &sp), 0);
    CHECK(recorder_tee_spill_write(t, &sp, "hello, ", 7) == 0);
    CHECK(recorder_tee_spill_write(t, &sp, "world", 5) == 0);
    recorder_tee_spill_done(t, &sp, 1, RECORDER_RESPONSE, 1001);
    CHECK_INT_EQ(sp.fd, -1);
    recorder_tee_end(t, 1, 1002, 0, "");
    /* A message whose stream was reset: its file goes. */
    recorder_spill cut;
    CHECK_INT_EQ(recorder_tee_spill_open(t, 2, RECORDER_REQUEST, &cut), 0);
    CHECK(recorder_tee_spill_write(t, &cut, "partial", 7) == 0);
    recorder_tee_spill_abort(t, &cut);
    recorder_tee_lost_as(t, RECORDER_LOST_TOO_LARGE);
    recorder_tee_lost_as(t, RECORDER_LOST_SPILL_FAILED);
    struct counts c = {.fd = p[0]};
    pthread_t th;
    CHECK_INT_EQ(pthread_create(&th, NULL, reader, &c), 0);
    recorder_tee_free(t);
    close(p[1]);
    pthread_join(th, NULL);
    close(p[0]);
    CHECK_INT_EQ(c.spilled, 1);
    CHECK_INT_EQ(c.large, 1);
    CHECK_INT_EQ(c.spill_failed, 1);
    CHECK_INT_EQ(c.dropped, 0);
    char path[200];
    snprintf(path, sizeof path, "%s/%s", spill, c.spill_name);
    char buf[64] = "";
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
    }
    CHECK_STR_EQ(buf, "hello, world");
    struct stat st;
    CHECK(stat(spill, &st) == 0 && (st.st_mode & 0777) == 0700);
    unlink(path);
    DIR *d = opendir(spill);
    int left = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        left += e->d_name[0] != '.';
    if (d)
        closedir(d);
    CHECK_INT_EQ(left, 0); /* the reset message's file is gone */

    /* A directory others may write is not used: big messages then pass
     * through memory as before. */
    CHECK_INT_EQ(mkdir(open_dir, 0777), 0);
    CHECK_INT_EQ(chmod(open_dir, 0777), 0);
    CHECK_INT_EQ(pipe(p), 0);
    CHECK_INT_EQ(recorder_tee_new(p[1], (size_t)1 << 20, &t), 0);
    recorder_tee_spill_to(t, open_dir);
    CHECK_INT_EQ(recorder_tee_spill_open(t, 1, RECORDER_REQUEST, &sp), -1);
    CHECK_INT_EQ(sp.fd, -1);
    recorder_tee_free(t);
    close(p[0]);
    close(p[1]);

    /* The recorder is gone (the pipe broke): spill files it would have
     * read are removed with the tee. */
    signal(SIGPIPE, SIG_IGN); /* as the shim has it */
    CHECK_INT_EQ(pipe(p), 0);
    close(p[0]);
    CHECK_INT_EQ(recorder_tee_new(p[1], (size_t)1 << 20, &t), 0);
    recorder_tee_spill_to(t, spill);
    recorder_tee_begin(t, 1, "/tfplugin5.Provider/ReadResource", 1000);
    CHECK_INT_EQ(recorder_tee_spill_open(t, 1, RECORDER_RESPONSE, &sp), 0);
    CHECK(recorder_tee_spill_write(t, &sp, "x", 1) == 0);
    recorder_tee_spill_done(t, &sp, 1, RECORDER_RESPONSE, 1001);
    recorder_tee_end(t, 1, 1002, 0, "");
    struct recorder_tee_outcome out;
    recorder_tee_finish(t, &out);
    CHECK_INT_EQ(out.pipe_broke, 1);
    free(out.ledger);
    close(p[1]);
    d = opendir(spill);
    left = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        left += e->d_name[0] != '.';
    if (d)
        closedir(d);
    CHECK_INT_EQ(left, 0);
    rmdir(spill);
    rmdir(open_dir);
    rmdir(dir);
}

/* ---- HPACK table size updates (RFC 7541 4.2) ---------------------------- */

static void frame(tftap_buf *b, size_t len, uint8_t type, uint8_t flags, uint32_t stream,
                  const void *payload)
{
    uint8_t h[9] = {(uint8_t)(len >> 16),
                    (uint8_t)(len >> 8),
                    (uint8_t)len,
                    type,
                    flags,
                    (uint8_t)(stream >> 24),
                    (uint8_t)(stream >> 16),
                    (uint8_t)(stream >> 8),
                    (uint8_t)stream};
    tftap_buf_append(b, h, sizeof h);
    if (len > 0)
        tftap_buf_append(b, payload, len);
}

static void settings_table(tftap_buf *b, uint32_t size)
{
    uint8_t p[6] = {
        0, 1, (uint8_t)(size >> 24), (uint8_t)(size >> 16), (uint8_t)(size >> 8), (uint8_t)size};
    frame(b, sizeof p, 4, 0, 0, p);
}

/* A request's HEADERS, encoded by a real HPACK encoder (nghttp2's), which
 * indexes the fields: later blocks refer to the dynamic table. */
static void request(tftap_buf *b, nghttp2_hd_deflater *d, uint32_t stream)
{
    nghttp2_nv nv[] = {
        {(uint8_t *)":method", (uint8_t *)"POST", 7, 4, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)":path", (uint8_t *)"/tfplugin5.Provider/GetSchema", 5, 29,
         NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)"x-custom", (uint8_t *)"a value to index", 8, 16, NGHTTP2_NV_FLAG_NONE},
    };
    uint8_t out[512];
    ssize_t n = nghttp2_hd_deflate_hd(d, out, sizeof out, nv, sizeof nv / sizeof nv[0]);
    CHECK(n > 0);
    frame(b, n > 0 ? (size_t)n : 0, 1, 0x4 /* END_HEADERS */, stream, out);
}

/* The provider changes the client's table size twice (0, then 4096) and
 * once more (0) with a plain SETTINGS in between: each ACK applies the
 * SETTINGS it acknowledges, in order, so a block sent between two ACKs
 * still decodes with the table it was encoded with, and a block after two
 * changes starts with two size updates. */
static void test_h2watch_table_size_updates(void)
{
    atomic_uint_least64_t next_id = 0;
    atomic_int open_calls = 0;
    proxy_h2watch *w = NULL;
    CHECK_INT_EQ(proxy_h2watch_new(NULL, &next_id, &open_calls, &w), 0);
    nghttp2_hd_deflater *d = NULL;
    CHECK_INT_EQ(nghttp2_hd_deflate_new(&d, 4096), 0);
    tftap_buf c = TFTAP_BUF_INIT, p = TFTAP_BUF_INIT;

    tftap_buf_puts(&c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    frame(&c, 0, 4, 0, 0, NULL);
    frame(&p, 0, 4, 0, 0, NULL); /* S1: nothing about the table */
    settings_table(&p, 0);       /* S2 */
    settings_table(&p, 4096);    /* S3 */
    request(&c, d, 1);
    frame(&c, 0, 4, 0x1, 0, NULL); /* ACK S1 */
    request(&c, d, 3);             /* still the 4096-byte table, entries and all */
    CHECK_INT_EQ(nghttp2_hd_deflate_change_table_size(d, 0), 0);
    frame(&c, 0, 4, 0x1, 0, NULL); /* ACK S2 */
    CHECK_INT_EQ(nghttp2_hd_deflate_change_table_size(d, 4096), 0);
    frame(&c, 0, 4, 0x1, 0, NULL); /* ACK S3 */
    request(&c, d, 5);             /* starts with two updates: 0, then 4096 */
    /* The provider shrinks it again, with SETTINGS in one frame: 0 then
     * 2048 (the smallest and the last count). */
    uint8_t two[12] = {0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 8, 0};
    frame(&p, sizeof two, 4, 0, 0, two);
    CHECK_INT_EQ(nghttp2_hd_deflate_change_table_size(d, 0), 0);
    CHECK_INT_EQ(nghttp2_hd_deflate_change_table_size(d, 2048), 0);
    frame(&c, 0, 4, 0x1, 0, NULL);
    request(&c, d, 7);
    CHECK(!tftap_buf_failed(&c) && !tftap_buf_failed(&p));

    /* The provider's bytes first: its SETTINGS were sent before the
     * client's ACKs of them. */
    proxy_h2watch_feed(w, PROXY_H2_FROM_PROVIDER, (const uint8_t *)p.data, p.len, 1);
    proxy_h2watch_feed(w, PROXY_H2_FROM_CLIENT, (const uint8_t *)c.data, c.len, 2);
    const char *problem = proxy_h2watch_problem(w);
    CHECK_STR_EQ(problem != NULL ? problem : "", "");
    CHECK_INT_EQ(atomic_load(&open_calls), 4);
    proxy_h2watch_free(w, 3);
    CHECK_INT_EQ(atomic_load(&open_calls), 0);
    nghttp2_hd_deflate_del(d);
    tftap_buf_done(&c);
    tftap_buf_done(&p);
}

int main(void)
{
    test_handshake();
    test_cert();
    test_env();
    test_meta();
    test_tee_flood();
    test_tee_spill();
    test_h2watch_table_size_updates();
    return check_report("test_proxy");
}
