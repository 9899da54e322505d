/* replay: the book. Every recorded call of one provider in a run, kept by
 * method and type with its request parsed once, so that a replayed call
 * finds the recorded one that asked the same and answers what it answered. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "replay/replay.h"
#include "replay/replay_int.h"

/* How many differing paths a mismatch text lists, and how much of each
 * value it shows: a user reads it in a diagnostic. */
#define BOOK_MAX_PATHS 20
#define BOOK_MAX_VALUE 200

struct entry {
    int64_t call_id;
    int64_t process_id; /* the recorded provider process that answered it */
    char *rpc;
    char *type_name; /* NULL when none */
    sj_doc *request;
    char *response_json;
    int has_status, status_code;
    char *status_message;
    int answered;
    int has_digest;
    char digest[65]; /* of the request's canonical text (canon) */
    /* Other calls of its method and type asked the same and were answered
     * otherwise: claimed across the replay's processes. */
    int contested;
};

/* A response with its secrets filled in, kept until the book is freed. */
struct filled {
    struct filled *next;
    char *text;
};

struct replay_book {
    struct entry *v;
    size_t n, cap;
    char **ignore;
    size_t nignore;
    analysis_value_diff_opts diff;
    /* The recording's key (none in a bundle): a value in clear where the
     * recording has it redacted matches by its hash. Under lock. */
    tftap_hmac *mac;
    tftap_buf text;
    pthread_mutex_t lock;
    struct filled *filled;
    /* The entries with a digest, by digest and then in call order: a call
     * finds those that asked the same text without passing over the
     * others (thousands of calls of one type made a replay quadratic). */
    size_t *by_digest;
    size_t nby_digest;
    /* The claims directory (-1: none), the recorded process this process
     * answered contested calls of (0: none yet), and whether it said it
     * went out of step. Under lock. */
    int claims_fd;
    int64_t twin;
    int out_of_step;
    /* Recorded processes with contested calls ran at the same time (two
     * configurations of the provider): the order the claims rely on does
     * not hold, and taking such a call is out of step. */
    int overlapping;
    const char *provider; /* during load only */
    int err;              /* during load only */
};

size_t replay_book_count(const replay_book *b)
{
    return b ? b->n : 0;
}

static char *dup_or_null(const char *s, int *err)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *err = TFTAP_ENOMEM;
    return d;
}

static int load_row(void *ctx, const store_call_row *row)
{
    replay_book *b = ctx;
    if (!row->provider || strcmp(row->provider, b->provider) != 0 || !row->request_json ||
        !row->rpc)
        return 0;
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        struct entry *v = realloc(b->v, cap * sizeof *v);
        if (!v)
            return TFTAP_ENOMEM;
        b->v = v;
        b->cap = cap;
    }
    struct entry *e = &b->v[b->n];
    memset(e, 0, sizeof *e);
    /* A request the store holds but cannot be read (a file from someone
     * else) is left out like an undecoded one. */
    int rc = sj_parse(row->request_json, strlen(row->request_json), 0, &e->request);
    if (rc == TFTAP_ENOMEM)
        return rc;
    if (rc)
        return 0;
    int err = 0;
    e->call_id = row->id;
    e->process_id = row->process_id;
    e->rpc = dup_or_null(row->rpc, &err);
    e->type_name = row->type_name && row->type_name[0] ? dup_or_null(row->type_name, &err) : NULL;
    e->response_json = dup_or_null(row->response_json, &err);
    e->status_message = dup_or_null(row->status_message, &err);
    e->has_status = row->has_status;
    e->status_code = row->status_code;
    b->n++; /* counted even on failure, so that free releases it */
    if (!err && !b->nignore) {
        rc = analysis_request_digest(sj_root(e->request), 0, e->digest);
        if (rc < 0)
            return rc;
        e->has_digest = rc;
    }
    return err;
}

void replay_book_free(replay_book *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++) {
        struct entry *e = &b->v[i];
        free(e->rpc);
        free(e->type_name);
        sj_free(e->request);
        free(e->response_json);
        free(e->status_message);
    }
    free(b->v);
    free(b->by_digest);
    if (b->claims_fd >= 0)
        close(b->claims_fd);
    tftap_hmac_free(b->mac);
    tftap_buf_done(&b->text);
    for (size_t i = 0; i < b->nignore; i++)
        free(b->ignore[i]);
    free(b->ignore);
    while (b->filled) {
        struct filled *f = b->filled;
        b->filled = f->next;
        /* It held the user's secrets. */
        memset(f->text, 0, strlen(f->text));
        free(f->text);
        free(f);
    }
    pthread_mutex_destroy(&b->lock);
    free(b);
}

/* Is value, in clear, the one the recording redacted? */
static int redacted_equal(void *ctx, const sj_node *redacted, const sj_node *value)
{
    replay_book *b = ctx;
    const sj_node *h = sj_get(redacted, "$sensitive");
    static const char pre[] = "hmac-sha256:";
    char hex[65];
    tftap_buf_reset(&b->text);
    sj_write(value, &b->text);
    return h && h->kind == SJ_STRING && h->len == sizeof pre - 1 + 64 &&
           memcmp(h->str, pre, sizeof pre - 1) == 0 && !tftap_buf_failed(&b->text) &&
           tftap_hmac_hex(b->mac, b->text.data, b->text.len, hex) == 0 &&
           memcmp(h->str + sizeof pre - 1, hex, 64) == 0;
}

/* b->by_digest's order: by digest, then call order (the index). */
static int by_digest_cmp(const void *x, const void *y, void *book)
{
    const replay_book *b = book;
    size_t i = *(const size_t *)x, j = *(const size_t *)y;
    int c = memcmp(b->v[i].digest, b->v[j].digest, 64);
    return c ? c : (i > j) - (i < j);
}

static int index_digests(replay_book *b)
{
    if (!(b->by_digest = malloc(b->n * sizeof *b->by_digest)))
        return TFTAP_ENOMEM;
    for (size_t i = 0; i < b->n; i++)
        if (b->v[i].has_digest)
            b->by_digest[b->nby_digest++] = i;
    qsort_r(b->by_digest, b->nby_digest, sizeof *b->by_digest, by_digest_cmp, b);
    return 0;
}

static int same_key(const struct entry *e, const char *rpc, const char *type_name);

static int same_answer(const struct entry *x, const struct entry *y)
{
    if (x->has_status != y->has_status || x->status_code != y->status_code)
        return 0;
    if (!x->response_json || !y->response_json)
        return x->response_json == y->response_json;
    return strcmp(x->response_json, y->response_json) == 0;
}

/* Within each run of equal digests: the calls of one method and type
 * answered otherwise than the first of them are contested, all of them
 * (an uncontested one would be answered again by every process). */
static void mark_contested(replay_book *b)
{
    for (size_t lo = 0, hi; lo < b->nby_digest; lo = hi) {
        hi = lo + 1;
        while (hi < b->nby_digest &&
               memcmp(b->v[b->by_digest[hi]].digest, b->v[b->by_digest[lo]].digest, 64) == 0)
            hi++;
        for (size_t k = lo + 1; k < hi; k++) {
            struct entry *e = &b->v[b->by_digest[k]];
            size_t first = lo;
            while (!same_key(&b->v[b->by_digest[first]], e->rpc, e->type_name))
                first++;
            if (first < k && !same_answer(&b->v[b->by_digest[first]], e))
                b->v[b->by_digest[first]].contested = 1;
        }
        for (size_t k = lo + 1; k < hi; k++) {
            struct entry *e = &b->v[b->by_digest[k]];
            size_t first = lo;
            while (!same_key(&b->v[b->by_digest[first]], e->rpc, e->type_name))
                first++;
            e->contested = b->v[b->by_digest[first]].contested;
        }
    }
}

static int contested_in(const replay_book *b, int64_t process)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->v[i].contested && b->v[i].process_id == process)
            return 1;
    return 0;
}

/* The provider's recorded processes with contested calls. */
static int with_contested(void *ctx, const store_process_row *p)
{
    const replay_book *b = ctx;
    return p->provider && strcmp(p->provider, b->provider) == 0 && contested_in(b, p->id);
}

/* Did the processes with contested calls run one after the other? */
static int find_overlap(store *s, int64_t run_id, replay_book *b)
{
    int apart = 1;
    int rc = analysis_processes_one_after_another(s, run_id, with_contested, b, &apart);
    b->overlapping = !rc && !apart;
    return rc;
}

/* The first position in b->by_digest whose entry's digest is not below
 * digest. */
static size_t digest_lower(const replay_book *b, const char *digest)
{
    size_t lo = 0, hi = b->nby_digest;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (memcmp(b->v[b->by_digest[mid]].digest, digest, 64) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int replay_book_load(store *s, int64_t run_id, const char *provider, const replay_book_opts *o,
                     replay_book **out)
{
    *out = NULL;
    replay_book *b = calloc(1, sizeof *b);
    if (!b)
        return TFTAP_ENOMEM;
    b->claims_fd = -1;
    if (pthread_mutex_init(&b->lock, NULL) != 0) {
        free(b);
        return TFTAP_ENOMEM;
    }
    int rc = 0;
    if (o && o->claims_dir &&
        (b->claims_fd = open(o->claims_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        rc = TFTAP_EIO;
        goto fail;
    }
    size_t n_ignore = o ? o->n_ignore : 0;
    if (n_ignore) {
        if (!(b->ignore = calloc(n_ignore, sizeof *b->ignore))) {
            rc = TFTAP_ENOMEM;
            goto fail;
        }
        for (; b->nignore < n_ignore; b->nignore++)
            if (!(b->ignore[b->nignore] = strdup(o->ignore[b->nignore]))) {
                rc = TFTAP_ENOMEM;
                goto fail;
            }
    }
    replay_compare_opts(&b->diff, (const char *const *)b->ignore, b->nignore);
    b->text = (tftap_buf)TFTAP_BUF_INIT;
    b->mac = store_value_hmac_new(s);
    b->diff.redacted_equal = b->mac ? redacted_equal : NULL;
    b->diff.redacted_ctx = b;
    b->provider = provider;
    rc = store_calls_query(s, run_id, NULL, load_row, b);
    b->provider = NULL;
    if (rc)
        goto fail;
    if (!b->n) {
        rc = TFTAP_ENOTFOUND;
        goto fail;
    }
    if ((rc = index_digests(b)) != 0)
        goto fail;
    if (b->claims_fd >= 0) {
        mark_contested(b);
        b->provider = provider;
        rc = find_overlap(s, run_id, b);
        b->provider = NULL;
        if (rc)
            goto fail;
    }
    *out = b;
    return 0;
fail:
    replay_book_free(b);
    return rc;
}

/* ---- comparing requests ---------------------------------------------------- */

void replay_compare_opts(analysis_value_diff_opts *o, const char *const *ignore, size_t n)
{
    memset(o, 0, sizeof *o);
    o->ignore = ignore;
    o->nignore = n;
    o->flags = ANALYSIS_VDIFF_SENSITIVE_EQUAL | ANALYSIS_VDIFF_REDACTED_MATCHES;
}

static int stop_at_first(void *ctx, const char *path, const sj_node *a, const sj_node *b)
{
    (void)ctx, (void)path, (void)a, (void)b;
    return 1;
}

/* The differing paths of two requests, each top-level field walked with
 * its name as the prefix (so that --ignore ".name" reaches every field's
 * ".name"). fn as analysis_value_diff's; 1 stops. */
int replay_compare_requests(
    const analysis_value_diff_opts *o, const sj_node *rec, const sj_node *now,
    int (*fn)(void *ctx, const char *path, const sj_node *a, const sj_node *b), void *ctx)
{
    if (!rec || !now || rec->kind != SJ_OBJECT || now->kind != SJ_OBJECT)
        return analysis_value_diff(rec, now, NULL, o, fn, ctx);
    tftap_buf prefix = TFTAP_BUF_INIT;
    int rc = 0;
    for (int side = 0; side < 2 && !rc; side++) {
        const sj_node *from = side ? now : rec, *other = side ? rec : now;
        for (const sj_node *m = from->child; m && !rc; m = m->next) {
            const sj_node *other_m = analysis_member_pair(other, from->child, m);
            /* Fields both have are walked once, from the recorded side. */
            if (side && other_m)
                continue;
            if (analysis_private_member(m))
                continue;
            tftap_buf_reset(&prefix);
            analysis_path_member(&prefix, m->key, m->key_len);
            if (tftap_buf_failed(&prefix)) {
                rc = TFTAP_ENOMEM;
                break;
            }
            rc = side ? analysis_value_diff(NULL, m, tftap_buf_cstr(&prefix), o, fn, ctx)
                      : analysis_value_diff(m, other_m, tftap_buf_cstr(&prefix), o, fn, ctx);
        }
    }
    tftap_buf_done(&prefix);
    return rc;
}

/* 1 when equal, 0 when not, or an error. */
static int matches(const replay_book *b, const struct entry *e, const sj_node *now)
{
    int rc = replay_compare_requests(&b->diff, sj_root(e->request), now, stop_at_first, NULL);
    return rc == 1 ? 0 : rc < 0 ? rc : 1;
}

static int same_key(const struct entry *e, const char *rpc, const char *type_name)
{
    if (strcmp(e->rpc, rpc) != 0)
        return 0;
    if (!type_name || !type_name[0])
        return e->type_name == NULL;
    return e->type_name && strcmp(e->type_name, type_name) == 0;
}

struct counting {
    size_t n;
};

static int count_path(void *ctx, const char *path, const sj_node *a, const sj_node *b)
{
    (void)path, (void)a, (void)b;
    ((struct counting *)ctx)->n++;
    return 0;
}

static void put_value(tftap_buf *out, const sj_node *v)
{
    if (!v) {
        tftap_buf_puts(out, "(absent)");
        return;
    }
    tftap_buf t = TFTAP_BUF_INIT;
    if (sj_write_sorted(v, &t) != 0) {
        out->failed = 1;
    } else if (t.len > BOOK_MAX_VALUE) {
        /* Cut between characters: the text becomes a diagnostic's detail,
         * a protobuf string, which the encoder refuses unless UTF-8. */
        size_t cut = BOOK_MAX_VALUE;
        while (cut > 0 && ((unsigned char)t.data[cut] & 0xC0) == 0x80)
            cut--;
        tftap_buf_append(out, t.data, cut);
        tftap_buf_printf(out, "... (%zu bytes)", t.len);
    } else {
        tftap_buf_append(out, t.data, t.len);
    }
    if (tftap_buf_failed(&t))
        out->failed = 1;
    tftap_buf_done(&t);
}

struct listing {
    tftap_buf *out;
    size_t n;
};

static int list_path(void *ctx, const char *path, const sj_node *a, const sj_node *b)
{
    struct listing *l = ctx;
    if (l->n++ >= BOOK_MAX_PATHS)
        return 0;
    tftap_buf_printf(l->out, "\n  %s: recorded ", path[0] ? path : "(the request)");
    put_value(l->out, a);
    tftap_buf_puts(l->out, ", replayed ");
    put_value(l->out, b);
    return 0;
}

static void put_call(tftap_buf *out, const char *rpc, const char *type_name)
{
    tftap_buf_puts(out, rpc);
    if (type_name && type_name[0])
        tftap_buf_printf(out, " of %s", type_name);
}

/* A database from someone else may quote bytes that are not UTF-8 (the
 * recorder never writes them); the text becomes a diagnostic's detail, a
 * protobuf string the encoder refuses unless UTF-8: each such byte becomes
 * '?'. */
static void valid_text(tftap_buf *t)
{
    unsigned char *p = (unsigned char *)t->data;
    for (size_t i = 0; i < t->len;) {
        size_t len = tftap_utf8_len(p + i, t->len - i);
        if (len == 0) {
            p[i] = '?';
            len = 1;
        }
        i += len;
    }
}

/* The mismatch text (and the nearest call's id). */
static int mismatch(replay_book *b, const char *rpc, const char *type_name, const sj_node *now,
                    replay_answer *out)
{
    const struct entry *near = NULL;
    size_t best = 0, same = 0;
    for (size_t i = 0; i < b->n; i++) {
        const struct entry *e = &b->v[i];
        if (!same_key(e, rpc, type_name))
            continue;
        same++;
        struct counting c = {0};
        int rc = replay_compare_requests(&b->diff, sj_root(e->request), now, count_path, &c);
        if (rc)
            return rc;
        /* Of equally near calls, one not answered yet (the call the
         * replay most likely stands at), else the earliest. */
        if (!near || c.n < best || (c.n == best && near->answered && !e->answered)) {
            near = e;
            best = c.n;
        }
    }
    tftap_buf t = TFTAP_BUF_INIT;
    tftap_buf_puts(&t, "no recorded call matches ");
    put_call(&t, rpc, type_name);
    if (!near) {
        tftap_buf_puts(&t, ": the recording has no ");
        put_call(&t, rpc, type_name);
        tftap_buf_puts(&t, " call");
    } else {
        tftap_buf_printf(&t,
                         "; the nearest recorded request (call %lld, of %zu recorded) differs "
                         "at %zu path%s:",
                         (long long)near->call_id, same, best, best == 1 ? "" : "s");
        struct listing l = {&t, 0};
        int rc = replay_compare_requests(&b->diff, sj_root(near->request), now, list_path, &l);
        if (rc) {
            tftap_buf_done(&t);
            return rc;
        }
        if (l.n > BOOK_MAX_PATHS)
            tftap_buf_printf(&t, "\n  ... and %zu more", l.n - BOOK_MAX_PATHS);
        out->call_id = near->call_id;
    }
    tftap_buf_cstr(&t);
    if (tftap_buf_failed(&t)) {
        tftap_buf_done(&t);
        return TFTAP_ENOMEM;
    }
    valid_text(&t);
    out->mismatch = tftap_buf_take(&t, NULL);
    return 0;
}

/* The replay left the recording's steps: said once, in the directory. */
static void out_of_step(replay_book *b)
{
    if (b->out_of_step)
        return;
    b->out_of_step = 1;
    int fd = openat(b->claims_fd, REPLAY_CLAIMS_OUT_OF_STEP, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
}

/* This process answered a contested call of recorded process `process`:
 * each replayed process stands for one recorded process, its alone
 * (replay.h). */
static void keep_in_step(replay_book *b, int64_t process)
{
    if (b->twin != 0) {
        if (b->twin != process)
            out_of_step(b);
        return;
    }
    char name[48];
    snprintf(name, sizeof name, "process-%" PRId64, process);
    int fd = openat(b->claims_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        out_of_step(b);
        return;
    }
    close(fd);
    b->twin = process;
}

/* Take e, a match not answered here before, for this call: 1, or 0 when
 * another process of the replay claimed it first (it counts as answered). */
static int take(replay_book *b, struct entry *e)
{
    e->answered = 1;
    if (!e->contested || b->claims_fd < 0)
        return 1;
    char name[32];
    snprintf(name, sizeof name, "%" PRId64, e->call_id);
    int fd = openat(b->claims_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST)
        return 0;
    if (fd >= 0)
        close(fd);
    /* Claimed, or not claimable (a full disk): answered, and the step
     * checked either way. */
    if (b->overlapping)
        out_of_step(b);
    keep_in_step(b, e->process_id);
    return 1;
}

/* Was e answered in this process's recorded twin? Of calls answered
 * before, asked again, the twin's last answers. */
static int own(const replay_book *b, const struct entry *e)
{
    return b->twin != 0 && e->process_id == b->twin;
}

int replay_book_answer(replay_book *b, const char *rpc, const char *type_name,
                       const char *request_json, size_t n, replay_answer *out)
{
    memset(out, 0, sizeof *out);
    if (!rpc)
        return TFTAP_EINVAL;
    sj_doc *doc = NULL;
    int rc = sj_parse(request_json, n, 0, &doc);
    if (rc)
        return rc;
    const sj_node *now = sj_root(doc);
    char digest[65];
    int hashed = 0;
    if (!b->nignore && (hashed = analysis_request_digest(now, 0, digest)) < 0) {
        sj_free(doc);
        return hashed;
    }
    pthread_mutex_lock(&b->lock);
    const struct entry *hit = NULL, *last = NULL;
    /* First only the requests with the same canonical text (the first of
     * them not answered yet, else the last); all of them when none of
     * those matches (the mismatch needs them anyway). */
    if (hashed) {
        size_t lo = digest_lower(b, digest), hi = lo;
        while (hi < b->nby_digest && memcmp(b->v[b->by_digest[hi]].digest, digest, 64) == 0)
            hi++;
        for (size_t k = lo; k < hi && !hit && !rc; k++) {
            struct entry *e = &b->v[b->by_digest[k]];
            if (e->answered || !same_key(e, rpc, type_name))
                continue;
            if ((rc = matches(b, e, now)) == 1 && take(b, e))
                hit = e;
            rc = rc < 0 ? rc : 0;
        }
        for (size_t k = hi; k > lo && !hit && !rc && !(last && own(b, last)); k--) {
            const struct entry *e = &b->v[b->by_digest[k - 1]];
            if (!e->answered || !same_key(e, rpc, type_name) || (last && !own(b, e)))
                continue;
            if ((rc = matches(b, e, now)) == 1)
                last = e;
            rc = rc < 0 ? rc : 0;
        }
    }
    int all = !hit && !last;
    for (size_t i = 0; all && !rc && i < b->n && !hit; i++) {
        struct entry *e = &b->v[i];
        if (!same_key(e, rpc, type_name))
            continue;
        rc = matches(b, e, now);
        if (rc < 0)
            break;
        if (rc == 1 && !e->answered && take(b, e))
            hit = e;
        else if (rc == 1 && (!last || own(b, e) || !own(b, last)))
            last = e;
        rc = 0;
    }
    if (!rc && !hit && last) {
        hit = last;
        /* Answered again: one of several answers, another process's. */
        if (last->contested && b->claims_fd >= 0 && !own(b, last))
            out_of_step(b);
    }
    if (!rc && hit) {
        out->found = 1;
        out->call_id = hit->call_id;
        out->response_json = hit->response_json;
        out->has_status = hit->has_status;
        out->status_code = hit->status_code;
        out->status_message = hit->status_message;
    } else if (!rc) {
        rc = mismatch(b, rpc, type_name, now, out);
    }
    pthread_mutex_unlock(&b->lock);
    sj_free(doc);
    return rc;
}

/* ---- filling secrets in from the request ------------------------------------------- */

/* What a response's value derives from, per method. */
struct fill_rule {
    const char *rpc;
    const char *target;     /* the response's value */
    const char *sources[2]; /* request fields, in order of preference */
};
static const struct fill_rule fill_rules[] = {
    {"PlanResourceChange", "planned_state", {"proposed_new_state", "config"}},
    {"ApplyResourceChange", "new_state", {"planned_state", "config"}},
    {"ReadResource", "new_state", {"current_state", NULL}},
    {"ReadDataSource", "state", {"config", NULL}},
    {"UpgradeResourceState", "upgraded_state", {"raw_state", NULL}},
};

/* A value the replayed request gave: known, not null, not redacted. */
static int usable(const sj_node *n)
{
    return n && n->kind != SJ_NULL && !sj_is_unknown(n) && !sj_is_sensitive(n);
}

/* Write v, each secret marker in it replaced by the value at the same
 * path of s1 (else s2) when that one is usable. */
static int put_filled(tftap_buf *out, const sj_node *v, const sj_node *s1, const sj_node *s2,
                      unsigned depth, size_t *nfilled)
{
    if (depth > TFTAP_JSON_MAX_DEPTH)
        return TFTAP_ELIMIT;
    if (sj_is_sensitive(v) && (usable(s1) || usable(s2))) {
        sj_write(usable(s1) ? s1 : s2, out);
        (*nfilled)++;
        return 0;
    }
    if (v->kind == SJ_OBJECT && !sj_is_sensitive(v) && !sj_is_unknown(v)) {
        tftap_buf_putc(out, '{');
        for (const sj_node *c = v->child; c; c = c->next) {
            if (c != v->child)
                tftap_buf_putc(out, ',');
            tftap_buf_json_string(out, c->key, c->key_len);
            tftap_buf_putc(out, ':');
            int rc = put_filled(out, c, sj_get_n(s1, c->key, c->key_len),
                                sj_get_n(s2, c->key, c->key_len), depth + 1, nfilled);
            if (rc)
                return rc;
        }
        tftap_buf_putc(out, '}');
        return 0;
    }
    if (v->kind == SJ_ARRAY) {
        tftap_buf_putc(out, '[');
        size_t i = 0;
        for (const sj_node *c = v->child; c; c = c->next, i++) {
            if (c != v->child)
                tftap_buf_putc(out, ',');
            int rc = put_filled(out, c, sj_at(s1, i), sj_at(s2, i), depth + 1, nfilled);
            if (rc)
                return rc;
        }
        tftap_buf_putc(out, ']');
        return 0;
    }
    sj_write(v, out);
    return 0;
}

static const sj_node *source_of(const sj_node *req, const char *field)
{
    const sj_node *n = field ? sj_get(req, field) : NULL;
    /* UpgradeResourceState's raw state renders as {"json": ..., "flatmap": ...}. */
    if (n && field && strcmp(field, "raw_state") == 0)
        n = sj_get(n, "json");
    return n;
}

int replay_fill_json(const char *rpc, const char *response_json, const char *plain_json, size_t n,
                     tftap_buf *out, size_t *nfilled)
{
    *nfilled = 0;
    const struct fill_rule *rule = NULL;
    for (size_t i = 0; rpc && i < sizeof fill_rules / sizeof fill_rules[0]; i++)
        if (strcmp(fill_rules[i].rpc, rpc) == 0)
            rule = &fill_rules[i];
    if (!rule || !response_json || !strstr(response_json, "\"$sensitive\""))
        return 0;
    sj_doc *resp = NULL, *req = NULL;
    size_t mark = out->len;
    int rc = sj_parse(response_json, strlen(response_json), 0, &resp);
    if (!rc)
        rc = sj_parse(plain_json, n, 0, &req);
    if (rc)
        goto done;
    const sj_node *r = sj_root(resp), *q = sj_root(req);
    if (r->kind != SJ_OBJECT || q->kind != SJ_OBJECT)
        goto done;
    const sj_node *s1 = source_of(q, rule->sources[0]), *s2 = source_of(q, rule->sources[1]);
    tftap_buf_putc(out, '{');
    for (const sj_node *c = r->child; c && !rc; c = c->next) {
        if (c != r->child)
            tftap_buf_putc(out, ',');
        tftap_buf_json_string(out, c->key, c->key_len);
        tftap_buf_putc(out, ':');
        if (c->key_len == strlen(rule->target) && memcmp(c->key, rule->target, c->key_len) == 0)
            rc = put_filled(out, c, s1, s2, 1, nfilled);
        else
            sj_write(c, out);
    }
    tftap_buf_putc(out, '}');
    tftap_buf_cstr(out);
    if (!rc && tftap_buf_failed(out))
        rc = TFTAP_ENOMEM;
done:
    if (rc || !*nfilled) {
        /* Nothing half written stays, and no secret either. */
        if (out->data && out->len > mark)
            memset(out->data + mark, 0, out->len - mark);
        out->len = mark;
        *nfilled = 0;
    }
    sj_free(resp);
    sj_free(req);
    return rc;
}

int replay_book_fill_sensitive(replay_book *b, const char *rpc, const char *plain_json, size_t n,
                               replay_answer *a)
{
    if (!a->found || !rpc)
        return TFTAP_EINVAL;
    tftap_buf out = TFTAP_BUF_INIT;
    size_t nfilled = 0;
    int rc = replay_fill_json(rpc, a->response_json, plain_json, n, &out, &nfilled);
    if (rc || !nfilled)
        goto done;
    struct filled *f = malloc(sizeof *f);
    if (!f) {
        rc = TFTAP_ENOMEM;
        goto done;
    }
    f->text = tftap_buf_take(&out, NULL);
    pthread_mutex_lock(&b->lock);
    f->next = b->filled;
    b->filled = f;
    pthread_mutex_unlock(&b->lock);
    a->response_json = f->text;
done:
    if (out.data)
        memset(out.data, 0, out.len);
    tftap_buf_done(&out);
    return rc;
}
