/* bench/store: sustained recorded calls per second through the recorder
 * (decoded in the caller's thread -> SQL thread -> SQLite or PostgreSQL), and
 * database bytes per recorded resource change.
 *
 * Each call is a PlanResourceChange of a realistic resource (24 attributes,
 * a tags map, two nested block lists, a sensitive attribute) with prior,
 * proposed, config and planned states, decoded against a real schema and
 * redacted, exactly as the proxy would hand them over.
 *
 * PROFILE small is a random_pet-sized resource (5 attributes) instead.
 * Besides wall time it reports the recorder's CPU time (the caller's while
 * it tells the calls, and the SQL thread's), which a busy shared machine
 * distorts far less.
 *
 * usage: bench_store [--calls N] [--profile large|small] [--rounds R]
 *                    [--db PATH|URI]... [CALLS] [PROFILE]
 * Each --db is a target (an SQLite file, made fresh for each round, or a
 * PostgreSQL URI); the same prepared messages go to each, the targets taking
 * turns round after round, so that a loaded machine's drift hits all alike.
 * Without --db: one SQLite file in a temporary directory. */
#include <dirent.h>
#include <getopt.h>
#include <libpq-fe.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "recorder/recorder.h"
#include "store/store.h"
#include "tfplugin5.pb-c.h"

#define M_SCHEMA "/tfplugin5.Provider/GetSchema"
#define M_PLAN "/tfplugin5.Provider/PlanResourceChange"
#define N_STR 14

static const char *const str_attrs[N_STR] = {
    "ami",           "arn",        "availability_zone", "host_id",         "id",
    "instance_type", "key_name",   "password",          "placement_group", "private_dns",
    "private_ip",    "public_dns", "public_ip",         "subnet_id",
};
static const char *const num_attrs[] = {"cpu_core_count", "cpu_threads_per_core",
                                        "ebs_optimized_iops", "hibernation_ms"};
static const char *const bool_attrs[] = {"associate_public_ip", "disable_api_stop", "monitoring",
                                         "source_dest_check"};

struct bytes {
    uint8_t *p;
    size_t n;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static struct bytes pack(const ProtobufCMessage *m)
{
    struct bytes b = {NULL, protobuf_c_message_get_packed_size(m)};
    b.p = malloc(b.n ? b.n : 1);
    protobuf_c_message_pack(m, b.p);
    return b;
}

static Tfplugin5__Schema__Attribute *attr(const char *name, const char *type, int sensitive)
{
    Tfplugin5__Schema__Attribute *a = calloc(1, sizeof *a);
    tfplugin5__schema__attribute__init(a);
    a->name = (char *)name;
    a->type.data = (uint8_t *)type;
    a->type.len = strlen(type);
    a->optional = 1;
    a->sensitive = sensitive;
    return a;
}

static Tfplugin5__Schema__NestedBlock *block_list(const char *name)
{
    Tfplugin5__Schema__Block *b = calloc(1, sizeof *b);
    tfplugin5__schema__block__init(b);
    b->n_attributes = 3;
    b->attributes = calloc(3, sizeof *b->attributes);
    b->attributes[0] = attr("device_name", "\"string\"", 0);
    b->attributes[1] = attr("volume_size", "\"number\"", 0);
    b->attributes[2] = attr("volume_type", "\"string\"", 0);
    Tfplugin5__Schema__NestedBlock *nb = calloc(1, sizeof *nb);
    tfplugin5__schema__nested_block__init(nb);
    nb->type_name = (char *)name;
    nb->block = b;
    nb->nesting = TFPLUGIN5__SCHEMA__NESTED_BLOCK__NESTING_MODE__LIST;
    return nb;
}

/* Leaks its small tree on purpose: built once per run. */
static struct bytes schema_response(void)
{
    Tfplugin5__Schema__Block *b = calloc(1, sizeof *b);
    tfplugin5__schema__block__init(b);
    size_t n = N_STR + 4 + 4 + 1;
    b->attributes = calloc(n, sizeof *b->attributes);
    for (int i = 0; i < N_STR; i++)
        b->attributes[b->n_attributes++] =
            attr(str_attrs[i], "\"string\"", strcmp(str_attrs[i], "password") == 0);
    for (int i = 0; i < 4; i++)
        b->attributes[b->n_attributes++] = attr(num_attrs[i], "\"number\"", 0);
    for (int i = 0; i < 4; i++)
        b->attributes[b->n_attributes++] = attr(bool_attrs[i], "\"bool\"", 0);
    b->attributes[b->n_attributes++] = attr("tags", "[\"map\",\"string\"]", 0);
    b->n_block_types = 2;
    b->block_types = calloc(2, sizeof *b->block_types);
    b->block_types[0] = block_list("ebs_block_device");
    b->block_types[1] = block_list("root_block_device");
    Tfplugin5__Schema s = TFPLUGIN5__SCHEMA__INIT;
    s.block = b;
    Tfplugin5__GetProviderSchema__Response__ResourceSchemasEntry e =
        TFPLUGIN5__GET_PROVIDER_SCHEMA__RESPONSE__RESOURCE_SCHEMAS_ENTRY__INIT;
    e.key = "bench_instance";
    e.value = &s;
    Tfplugin5__GetProviderSchema__Response__ResourceSchemasEntry *es[1] = {&e};
    Tfplugin5__Schema__Block pb = TFPLUGIN5__SCHEMA__BLOCK__INIT;
    Tfplugin5__Schema ps = TFPLUGIN5__SCHEMA__INIT;
    ps.block = &pb;
    Tfplugin5__GetProviderSchema__Response r = TFPLUGIN5__GET_PROVIDER_SCHEMA__RESPONSE__INIT;
    r.provider = &ps;
    r.n_resource_schemas = 1;
    r.resource_schemas = es;
    return pack(&r.base);
}

static void pstr(msgpack_packer *pk, const char *s)
{
    msgpack_pack_str(pk, strlen(s));
    msgpack_pack_str_body(pk, s, strlen(s));
}

struct kv {
    const char *k;
    int kind; /* 0 str, 1 num, 2 bool, 3 tags, 4 blocks */
    int idx;
};

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const struct kv *)a)->k, ((const struct kv *)b)->k);
}

/* Attributes the provider computes: null in configuration. */
static int computed(const char *name)
{
    static const char *const c[] = {"arn",        "host_id",    "id",       "private_dns",
                                    "private_ip", "public_dns", "public_ip"};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        if (strcmp(name, c[i]) == 0)
            return 1;
    return 0;
}

/* One instance's state; unknown_id: planned state of a new instance;
 * config: the configuration (computed attributes null). */
static struct bytes state(int i, int unknown_id, int variant, int config)
{
    struct kv kvs[32];
    size_t n = 0;
    for (int j = 0; j < N_STR; j++)
        kvs[n++] = (struct kv){str_attrs[j], 0, j};
    for (int j = 0; j < 4; j++)
        kvs[n++] = (struct kv){num_attrs[j], 1, j};
    for (int j = 0; j < 4; j++)
        kvs[n++] = (struct kv){bool_attrs[j], 2, j};
    kvs[n++] = (struct kv){"tags", 3, 0};
    kvs[n++] = (struct kv){"ebs_block_device", 4, 3};
    kvs[n++] = (struct kv){"root_block_device", 4, 1};
    qsort(kvs, n, sizeof kvs[0], kv_cmp);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, n);
    char v[96];
    for (size_t j = 0; j < n; j++) {
        pstr(&pk, kvs[j].k);
        switch (kvs[j].kind) {
        case 0:
            if (config && computed(kvs[j].k)) {
                msgpack_pack_nil(&pk);
            } else if (unknown_id &&
                       (strcmp(kvs[j].k, "id") == 0 || strcmp(kvs[j].k, "arn") == 0)) {
                msgpack_pack_ext(&pk, 1, 0);
                msgpack_pack_ext_body(&pk, "", 1);
            } else {
                snprintf(v, sizeof v, "%s-%08d-%c%s", kvs[j].k, i, 'a' + variant,
                         "-0123456789abcdef");
                pstr(&pk, v);
            }
            break;
        case 1:
            msgpack_pack_int64(&pk, (int64_t)i * 7 + kvs[j].idx + variant);
            break;
        case 2:
            if ((i + kvs[j].idx) & 1)
                msgpack_pack_true(&pk);
            else
                msgpack_pack_false(&pk);
            break;
        case 3:
            msgpack_pack_map(&pk, 5);
            for (int t = 0; t < 5; t++) {
                snprintf(v, sizeof v, "tag%d", t);
                pstr(&pk, v);
                snprintf(v, sizeof v, "value-%d-%d", i, t);
                pstr(&pk, v);
            }
            break;
        case 4:
            msgpack_pack_array(&pk, (size_t)kvs[j].idx);
            for (int e = 0; e < kvs[j].idx; e++) {
                msgpack_pack_map(&pk, 3);
                pstr(&pk, "device_name");
                snprintf(v, sizeof v, "/dev/sd%c", 'b' + e);
                pstr(&pk, v);
                pstr(&pk, "volume_size");
                msgpack_pack_int(&pk, 100 + e + variant);
                pstr(&pk, "volume_type");
                pstr(&pk, "gp3");
            }
            break;
        }
    }
    struct bytes b = {malloc(sb.size), sb.size};
    memcpy(b.p, sb.data, sb.size);
    msgpack_sbuffer_destroy(&sb);
    return b;
}

static int small_profile;

/* random_pet-like: id, keepers (map), length, prefix, separator. */
static struct bytes small_state(int i, int variant)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    char v[64];
    msgpack_pack_map(&pk, 5);
    pstr(&pk, "id");
    snprintf(v, sizeof v, "pet-%d-%c", i, 'a' + variant);
    pstr(&pk, v);
    pstr(&pk, "keepers");
    msgpack_pack_map(&pk, 1);
    pstr(&pk, "build");
    snprintf(v, sizeof v, "%d", i);
    pstr(&pk, v);
    pstr(&pk, "length");
    msgpack_pack_int(&pk, 2 + variant);
    pstr(&pk, "prefix");
    msgpack_pack_nil(&pk);
    pstr(&pk, "separator");
    pstr(&pk, "-");
    struct bytes b = {malloc(sb.size), sb.size};
    memcpy(b.p, sb.data, sb.size);
    msgpack_sbuffer_destroy(&sb);
    return b;
}

static struct bytes small_schema_response(void)
{
    Tfplugin5__Schema__Block *b = calloc(1, sizeof *b);
    tfplugin5__schema__block__init(b);
    b->attributes = calloc(5, sizeof *b->attributes);
    b->attributes[b->n_attributes++] = attr("id", "\"string\"", 0);
    b->attributes[b->n_attributes++] = attr("keepers", "[\"map\",\"string\"]", 0);
    b->attributes[b->n_attributes++] = attr("length", "\"number\"", 0);
    b->attributes[b->n_attributes++] = attr("prefix", "\"string\"", 0);
    b->attributes[b->n_attributes++] = attr("separator", "\"string\"", 0);
    Tfplugin5__Schema s = TFPLUGIN5__SCHEMA__INIT;
    s.block = b;
    Tfplugin5__GetProviderSchema__Response__ResourceSchemasEntry e =
        TFPLUGIN5__GET_PROVIDER_SCHEMA__RESPONSE__RESOURCE_SCHEMAS_ENTRY__INIT;
    e.key = "bench_instance";
    e.value = &s;
    Tfplugin5__GetProviderSchema__Response__ResourceSchemasEntry *es[1] = {&e};
    Tfplugin5__Schema__Block pb = TFPLUGIN5__SCHEMA__BLOCK__INIT;
    Tfplugin5__Schema ps = TFPLUGIN5__SCHEMA__INIT;
    ps.block = &pb;
    Tfplugin5__GetProviderSchema__Response r = TFPLUGIN5__GET_PROVIDER_SCHEMA__RESPONSE__INIT;
    r.provider = &ps;
    r.n_resource_schemas = 1;
    r.resource_schemas = es;
    return pack(&r.base);
}

static void dv(Tfplugin5__DynamicValue *d, const struct bytes *b)
{
    tfplugin5__dynamic_value__init(d);
    d->msgpack.data = b->p;
    d->msgpack.len = b->n;
}

/* An in-place update as tofu and a provider send it: prior -> proposed
 * (the configuration with the prior's computed values) and planned (the
 * proposed state: nothing computed changes); the configuration has its
 * computed attributes null. */
static void plan_messages(int i, struct bytes *req, struct bytes *resp)
{
    struct bytes prior = small_profile ? small_state(i, 0) : state(i, 0, 0, 0);
    struct bytes next = small_profile ? small_state(i, 1) : state(i, 0, 1, 0);
    struct bytes config = small_profile ? small_state(i, 1) : state(i, 0, 1, 1);
    Tfplugin5__DynamicValue d1, d2, d3, d4;
    dv(&d1, &prior);
    dv(&d2, &next);
    dv(&d3, &config);
    dv(&d4, &next);
    Tfplugin5__PlanResourceChange__Request q = TFPLUGIN5__PLAN_RESOURCE_CHANGE__REQUEST__INIT;
    q.type_name = "bench_instance";
    q.prior_state = &d1;
    q.proposed_new_state = &d2;
    q.config = &d3;
    *req = pack(&q.base);
    Tfplugin5__PlanResourceChange__Response r = TFPLUGIN5__PLAN_RESOURCE_CHANGE__RESPONSE__INIT;
    r.planned_state = &d4;
    *resp = pack(&r.base);
    free(prior.p);
    free(next.p);
    free(config.p);
}

/* CPU seconds of each thread but the caller's (the recorder's SQL
 * thread), read from /proc; returns how many were found. */
static int thread_cpu(double *out, char names[][16], int max)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    long hz = sysconf(_SC_CLK_TCK);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        if (e->d_name[0] == '.' || atoi(e->d_name) == getpid())
            continue;
        char path[300], buf[1024];
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = '\0';
        /* Fields after the ")" of the command name: 14th and 15th overall. */
        char *p = strrchr(buf, ')');
        char *q = strchr(buf, '(');
        unsigned long ut = 0, st = 0;
        if (p && q &&
            sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2) {
            snprintf(names[n], 16, "%.*s", (int)(p - q - 1), q + 1);
            out[n++] = (double)(ut + st) / (double)hz;
        }
    }
    closedir(d);
    return n;
}

static long long file_size(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (long long)st.st_size : 0;
}

static int is_pg(const char *target)
{
    return strncmp(target, "postgresql://", 13) == 0 || strncmp(target, "postgres://", 11) == 0;
}

/* Bytes the PostgreSQL database takes (tables, indexes, TOAST), or -1. */
static long long pg_db_bytes(const char *uri)
{
    PGconn *c = PQconnectdb(uri);
    long long n = -1;
    if (PQstatus(c) == CONNECTION_OK) {
        PGresult *r = PQexec(c, "SELECT pg_database_size(current_database())");
        if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
            n = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        PQclear(r);
    }
    PQfinish(c);
    return n;
}

static double loadavg(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1;
        fclose(f);
    }
    return l;
}

struct result {
    double wall_s, enq_s, enqueue_max_s, cpu_s, busiest_s, load;
    long long bytes;
    uint64_t dropped;
    char threads[160];
};

/* One timed run into target (an SQLite file path or a PostgreSQL URI). The
 * messages are copied first: the recorder takes (and frees) what it gets. */
static int run_one(const char *target, int calls, const struct bytes *schema,
                   const struct bytes *req0, const struct bytes *resp0, struct result *res)
{
    struct bytes *req = calloc((size_t)calls, sizeof *req),
                 *resp = calloc((size_t)calls, sizeof *resp);
    if (!req || !resp)
        return -1;
    for (int i = 0; i < calls; i++) {
        req[i].n = req0[i].n;
        req[i].p = malloc(req[i].n ? req[i].n : 1);
        memcpy(req[i].p, req0[i].p, req[i].n);
        resp[i].n = resp0[i].n;
        resp[i].p = malloc(resp[i].n ? resp[i].n : 1);
        memcpy(resp[i].p, resp0[i].p, resp[i].n);
    }
    long long bytes0 = is_pg(target) ? pg_db_bytes(target) : 0;
    memset(res, 0, sizeof *res);
    recorder_opts o = {0};
    o.max_queue_bytes = (size_t)2 << 30;
    recorder *r = NULL;
    if (recorder_open(target, &o, &r)) {
        fprintf(stderr, "bench_store: cannot open a recorder on %s\n", target);
        return -1;
    }
    recorder_process(r, "registry.opentofu.org/bench/bench", "1.0.0", NULL, 5, getpid());
    struct rusage ru0;
    struct timespec m0;
    getrusage(RUSAGE_SELF, &ru0);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &m0);
    double t0 = now_s();
    recorder_call_begin(r, 1, M_SCHEMA, now_us());
    recorder_message(r, 1, RECORDER_REQUEST, now_us(), "", 0);
    recorder_message(r, 1, RECORDER_RESPONSE, now_us(), schema->p, schema->n);
    recorder_call_end(r, 1, now_us(), 0, NULL);
    for (int i = 0; i < calls; i++) {
        double e0 = now_s();
        uint64_t id = (uint64_t)i + 2;
        recorder_call_begin(r, id, M_PLAN, now_us());
        /* As the proxy's recorder process does: the bytes read from the
         * pipe are handed over, not copied. */
        recorder_message_take(r, id, RECORDER_REQUEST, now_us(), req[i].p, req[i].n);
        recorder_message_take(r, id, RECORDER_RESPONSE, now_us(), resp[i].p, resp[i].n);
        req[i].p = resp[i].p = NULL;
        recorder_call_end(r, id, now_us(), 0, NULL);
        double e = now_s() - e0;
        if (e > res->enqueue_max_s)
            res->enqueue_max_s = e;
    }
    res->enq_s = now_s() - t0;
    /* The caller decodes what it tells (the recorder's first stage runs in
     * its thread, as in the recorder process's pipe reader): its CPU until
     * here is the recorder's too. */
    struct timespec mfed;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mfed);
    double feed_cpu = (double)(mfed.tv_sec - m0.tv_sec) + (double)(mfed.tv_nsec - m0.tv_nsec) / 1e9;
    /* Wait until everything is committed, then look at the threads' CPU
     * before close ends them. */
    recorder_stats st;
    uint64_t want = 4 * ((uint64_t)calls + 1);
    for (;;) {
        recorder_get_stats(r, &st);
        if (st.written + st.dropped >= want)
            break;
        usleep(1000);
    }
    res->wall_s = now_s() - t0;
    double tcpu[8];
    char tname[8][16];
    int nt = thread_cpu(tcpu, tname, 8);
    size_t tl = (size_t)snprintf(res->threads, sizeof res->threads, " caller %.2f s", feed_cpu);
    res->busiest_s = feed_cpu;
    for (int i = 0; i < nt; i++) {
        if (tcpu[i] > res->busiest_s)
            res->busiest_s = tcpu[i];
        tl += (size_t)snprintf(res->threads + tl, sizeof res->threads - tl, " %s %.2f s", tname[i],
                               tcpu[i]);
        if (tl >= sizeof res->threads)
            tl = sizeof res->threads - 1;
    }
    res->dropped = st.dropped;
    recorder_close(r);
    if (!is_pg(target)) {
        /* After close: the WAL (up to a checkpoint's worth) is folded in. */
        char wal[600];
        snprintf(wal, sizeof wal, "%s-wal", target);
        res->bytes = file_size(target) + file_size(wal);
    }
    struct rusage ru1;
    struct timespec m1;
    getrusage(RUSAGE_SELF, &ru1);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &m1);
    double proc_cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) +
                      (double)(ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
                      (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1e6 +
                      (double)(ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6;
    double main_cpu = (double)(m1.tv_sec - m0.tv_sec) + (double)(m1.tv_nsec - m0.tv_nsec) / 1e9;
    res->cpu_s = proc_cpu - (main_cpu - feed_cpu); /* all but the waiting after feeding */
    if (is_pg(target)) {
        long long b1 = pg_db_bytes(target);
        res->bytes = bytes0 >= 0 && b1 >= 0 ? b1 - bytes0 : -1;
    }
    res->load = loadavg();
    for (int i = 0; i < calls; i++) {
        free(req[i].p);
        free(resp[i].p);
    }
    free(req);
    free(resp);
    return 0;
}

static void remove_sqlite(const char *path)
{
    char p[600];
    unlink(path);
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MAX_TARGETS 4
#define MAX_ROUNDS 16

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_store [--calls N] [--profile large|small] [--rounds R] "
               "[--db PATH|URI]... [CALLS] [PROFILE]\n");
}

int main(int argc, char **argv)
{
    int calls = 50000, rounds = 1, ntargets = 0;
    setvbuf(stdout, NULL, _IOLBF, 0); /* each round as it ends */
    const char *targets[MAX_TARGETS];
    static const struct option longopts[] = {
        {"calls", required_argument, NULL, 'n'},  {"profile", required_argument, NULL, 'p'},
        {"rounds", required_argument, NULL, 'r'}, {"db", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case 'n':
            calls = (int)strtol(optarg, NULL, 10);
            break;
        case 'p':
            small_profile = strcmp(optarg, "small") == 0;
            break;
        case 'r':
            rounds = (int)strtol(optarg, NULL, 10);
            break;
        case 'd':
            if (ntargets == MAX_TARGETS) {
                fprintf(stderr, "bench_store: at most %d --db\n", MAX_TARGETS);
                return 2;
            }
            targets[ntargets++] = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc)
        calls = (int)strtol(argv[optind++], NULL, 10);
    if (optind < argc)
        small_profile = strcmp(argv[optind++], "small") == 0;
    if (optind < argc) {
        fprintf(stderr, "bench_store: unexpected operand '%s' (where the database goes: --db)\n",
                argv[optind]);
        return 2;
    }
    if (calls <= 0)
        calls = 1;
    if (rounds < 1)
        rounds = 1;
    if (rounds > MAX_ROUNDS)
        rounds = MAX_ROUNDS;
    /* SQLite targets are files made fresh each round; without any target,
     * one in a temporary directory. */
    char dir[512] = "";
    if (ntargets == 0) {
        snprintf(dir, sizeof dir, "%s/tftap-bench-store-XXXXXX",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            return 1;
        }
        static char path[600];
        snprintf(path, sizeof path, "%s/tftap.db", dir);
        targets[ntargets++] = path;
    }

    /* Messages are prepared before timing: the relay already has them. */
    struct bytes schema = small_profile ? small_schema_response() : schema_response();
    struct bytes *req = calloc((size_t)calls, sizeof *req),
                 *resp = calloc((size_t)calls, sizeof *resp);
    size_t payload = 0;
    for (int i = 0; i < calls; i++) {
        plan_messages(i, &req[i], &resp[i]);
        payload += req[i].n + resp[i].n;
    }
    printf("bench_store: %d PlanResourceChange calls (%s resource), %.0f bytes of messages "
           "each, %d round(s), load %.1f\n",
           calls, small_profile ? "small" : "large", (double)payload / calls, rounds, loadavg());

    static struct result res[MAX_TARGETS][MAX_ROUNDS];
    int failed = 0;
    for (int k = 0; k < rounds; k++)
        for (int t = 0; t < ntargets; t++) {
            if (!is_pg(targets[t]))
                remove_sqlite(targets[t]);
            struct result *x = &res[t][k];
            if (run_one(targets[t], calls, &schema, req, resp, x)) {
                failed = 1;
                continue;
            }
            printf("  round %d %-10s %8.0f calls/s, %5.1f us recorder CPU per call, busiest "
                   "thread %6.0f calls/s, enqueue %.1f us per call (worst %.0f us), "
                   "%lld bytes per change, dropped %llu, load %.1f;%s\n",
                   k + 1, is_pg(targets[t]) ? "postgresql" : "sqlite", calls / x->wall_s,
                   x->cpu_s * 1e6 / calls, x->busiest_s > 0 ? calls / x->busiest_s : 0.0,
                   x->enq_s * 1e6 / calls, x->enqueue_max_s * 1e6,
                   x->bytes >= 0 ? x->bytes / calls : -1, (unsigned long long)x->dropped, x->load,
                   x->threads);
            failed |= x->dropped != 0;
        }
    /* Medians, and each target against the first. */
    printf("\n  %-10s %12s %10s %14s %16s %10s\n", "target", "calls/s", "ratio", "CPU us/call",
           "busiest calls/s", "B/change");
    double base = 0;
    for (int t = 0; t < ntargets; t++) {
        double w[MAX_ROUNDS], c[MAX_ROUNDS], b[MAX_ROUNDS], z[MAX_ROUNDS];
        for (int k = 0; k < rounds; k++) {
            w[k] = calls / res[t][k].wall_s;
            c[k] = res[t][k].cpu_s * 1e6 / calls;
            b[k] = res[t][k].busiest_s > 0 ? calls / res[t][k].busiest_s : 0;
            z[k] = (double)res[t][k].bytes / calls;
        }
        double mw = median(w, rounds);
        if (t == 0)
            base = mw;
        printf("  %-10s %12.0f %9.2fx %14.1f %16.0f %10.0f\n",
               is_pg(targets[t]) ? "postgresql" : "sqlite", mw, base > 0 ? mw / base : 0,
               median(c, rounds), median(b, rounds), median(z, rounds));
    }
    for (int i = 0; i < calls; i++) {
        free(req[i].p);
        free(resp[i].p);
    }
    free(req);
    free(resp);
    free(schema.p);
    if (dir[0]) {
        remove_sqlite(targets[0]);
        rmdir(dir);
    }
    return failed ? 1 : 0;
}
