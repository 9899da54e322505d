/* bench/store: sustained recorded calls per second through the recorder
 * (queue -> writer thread -> decode -> SQLite), and database bytes per
 * recorded resource change.
 *
 * Each call is a PlanResourceChange of a realistic resource (24 attributes,
 * a tags map, two nested block lists, a sensitive attribute) with prior,
 * proposed, config and planned states, decoded against a real schema and
 * redacted, exactly as the proxy would hand them over.
 *
 * PROFILE small is a random_pet-sized resource (5 attributes) instead.
 * Besides wall time it reports the writer thread's CPU time, which a busy
 * shared machine distorts far less.
 *
 * usage: bench_store [CALLS] [large|small] [DIR]   (defaults: 50000, large, a temp dir) */
#include <dirent.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

/* One instance's state; unknown_id: planned state of a new instance. */
static struct bytes state(int i, int unknown_id, int variant)
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
            if (unknown_id && (strcmp(kvs[j].k, "id") == 0 || strcmp(kvs[j].k, "arn") == 0)) {
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

/* An in-place update: prior -> config/proposed/planned. */
static void plan_messages(int i, struct bytes *req, struct bytes *resp)
{
    struct bytes prior = small_profile ? small_state(i, 0) : state(i, 0, 0);
    struct bytes next = small_profile ? small_state(i, 1) : state(i, 0, 1);
    Tfplugin5__DynamicValue d1, d2, d3, d4;
    dv(&d1, &prior);
    dv(&d2, &next);
    dv(&d3, &next);
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
}

/* CPU seconds of each thread but the caller's (the recorder's decoder and
 * SQL threads), read from /proc; returns how many were found. */
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

int main(int argc, char **argv)
{
    int calls = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 50000;
    small_profile = argc > 2 && strcmp(argv[2], "small") == 0;
    char dir[512];
    if (argc > 3)
        snprintf(dir, sizeof dir, "%s", argv[3]);
    else {
        snprintf(dir, sizeof dir, "%s/tftap-bench-store-XXXXXX",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            return 1;
        }
    }
    if (calls <= 0)
        calls = 1;
    char path[600];
    snprintf(path, sizeof path, "%s/tftap.db", dir);

    /* Messages are prepared before timing: the relay already has them. */
    struct bytes schema = small_profile ? small_schema_response() : schema_response();
    struct bytes *req = calloc((size_t)calls, sizeof *req),
                 *resp = calloc((size_t)calls, sizeof *resp);
    size_t payload = 0;
    for (int i = 0; i < calls; i++) {
        plan_messages(i, &req[i], &resp[i]);
        payload += req[i].n + resp[i].n;
    }

    store_recorder_opts o = {0};
    o.max_queue_bytes = (size_t)2 << 30;
    store_recorder *r = NULL;
    if (store_recorder_open(path, &o, &r)) {
        fprintf(stderr, "bench_store: cannot open recorder\n");
        return 1;
    }
    store_recorder_process(r, "registry.opentofu.org/bench/bench", "1.0.0", NULL, 5, getpid());
    struct rusage ru0;
    struct timespec m0;
    getrusage(RUSAGE_SELF, &ru0);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &m0);
    double t0 = now_s();
    store_recorder_call_begin(r, 1, M_SCHEMA, now_us());
    store_recorder_message(r, 1, STORE_REQUEST, now_us(), "", 0);
    store_recorder_message(r, 1, STORE_RESPONSE, now_us(), schema.p, schema.n);
    store_recorder_call_end(r, 1, now_us(), 0, NULL);
    double enqueue_max = 0;
    for (int i = 0; i < calls; i++) {
        double e0 = now_s();
        uint64_t id = (uint64_t)i + 2;
        store_recorder_call_begin(r, id, M_PLAN, now_us());
        /* As the proxy's recorder process does: the bytes read from the
         * pipe are handed over, not copied. */
        store_recorder_message_take(r, id, STORE_REQUEST, now_us(), req[i].p, req[i].n);
        store_recorder_message_take(r, id, STORE_RESPONSE, now_us(), resp[i].p, resp[i].n);
        req[i].p = resp[i].p = NULL;
        store_recorder_call_end(r, id, now_us(), 0, NULL);
        double e = now_s() - e0;
        if (e > enqueue_max)
            enqueue_max = e;
    }
    double t_enq = now_s() - t0;
    /* Wait until everything is committed, then look at the threads' CPU
     * before close ends them. */
    store_recorder_stats st;
    uint64_t want = 4 * ((uint64_t)calls + 1);
    for (;;) {
        store_recorder_get_stats(r, &st);
        if (st.written + st.dropped >= want)
            break;
        usleep(1000);
    }
    double t_all = now_s() - t0;
    double tcpu[8];
    char tname[8][16];
    int nt = thread_cpu(tcpu, tname, 8);
    double busiest = 0;
    for (int i = 0; i < nt; i++)
        if (tcpu[i] > busiest)
            busiest = tcpu[i];
    uint64_t dropped = st.dropped;
    store_recorder_close(r);
    struct rusage ru1;
    struct timespec m1;
    getrusage(RUSAGE_SELF, &ru1);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &m1);
    double proc_cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) +
                      (double)(ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
                      (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1e6 +
                      (double)(ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6;
    double main_cpu = (double)(m1.tv_sec - m0.tv_sec) + (double)(m1.tv_nsec - m0.tv_nsec) / 1e9;
    double writer_cpu = proc_cpu - main_cpu;

    char wal[620];
    snprintf(wal, sizeof wal, "%s-wal", path);
    long long bytes = file_size(path) + file_size(wal);
    printf("bench_store: %d PlanResourceChange calls (%s resource), %.0f bytes of messages "
           "each\n",
           calls, small_profile ? "small" : "large", (double)payload / calls);
    printf("  enqueue (relay side):   %.3f s total, %.1f us per call, worst call %.1f us\n", t_enq,
           t_enq * 1e6 / calls, enqueue_max * 1e6);
    printf("  recorded and committed: %.3f s -> %.0f calls/s\n", t_all, calls / t_all);
    printf("  recorder CPU:           %.3f s -> %.1f us per call (decoder + SQL threads)\n",
           writer_cpu, writer_cpu * 1e6 / calls);
    printf("  busiest thread:         %.2f s of CPU -> %.0f calls/s with a free core per "
           "thread\n",
           busiest, busiest > 0 ? calls / busiest : 0.0);
    printf("  threads' CPU:          ");
    for (int i = 0; i < nt; i++)
        printf(" %s %.2f s", tname[i], tcpu[i]);
    printf("\n");
    printf("  dropped events:         %llu\n", (unsigned long long)dropped);
    printf("  database:               %lld bytes -> %.0f bytes per resource change\n", bytes,
           (double)bytes / calls);
    for (int i = 0; i < calls; i++) {
        free(req[i].p);
        free(resp[i].p);
    }
    free(req);
    free(resp);
    free(schema.p);
    if (argc <= 3) {
        unlink(path);
        unlink(wal);
        char shm[620];
        snprintf(shm, sizeof shm, "%s-shm", path);
        unlink(shm);
        rmdir(dir);
    }
    return dropped ? 1 : 0;
}
