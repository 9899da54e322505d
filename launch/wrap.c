/* launch: the provider discovery and shim writing that `tftap run` and
 * `tftap wrap` (cli/wrap_opts.c) share: which providers a working directory
 * uses, where their binaries are, and a CLI config whose dev_overrides send
 * the CLI to our shims. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch/launch_int.h"
#include "launch/hcl_int.h"
#include "proxy/proxy.h"
#include "store/store.h"

/* Bounds on what we read: CLI configs and lock files are small. */
#define CONFIG_MAX_BYTES (4u << 20)
#define MAX_MIRRORS 16

#if defined(__linux__)
#define PLATFORM_OS "linux"
#elif defined(__APPLE__)
#define PLATFORM_OS "darwin"
#elif defined(__FreeBSD__)
#define PLATFORM_OS "freebsd"
#else
#define PLATFORM_OS "unknown"
#endif
#if defined(__x86_64__)
#define PLATFORM_ARCH "amd64"
#elif defined(__aarch64__)
#define PLATFORM_ARCH "arm64"
#elif defined(__i386__)
#define PLATFORM_ARCH "386"
#elif defined(__arm__)
#define PLATFORM_ARCH "arm"
#else
#define PLATFORM_ARCH "unknown"
#endif
#define PLATFORM PLATFORM_OS "_" PLATFORM_ARCH

/* ---- small helpers ------------------------------------------------------- */

char *launch_abspath(const char *path)
{
    if (path[0] == '/' || store_path_is_url(path))
        return strdup(path);
    char *cwd = getcwd(NULL, 0);
    if (cwd == NULL)
        return NULL;
    tftap_buf b = TFTAP_BUF_INIT;
    tftap_buf_printf(&b, "%s/%s", cwd, path);
    free(cwd);
    tftap_buf_cstr(&b);
    if (tftap_buf_failed(&b)) {
        tftap_buf_done(&b);
        return NULL;
    }
    return tftap_buf_take(&b, NULL);
}

char *launch_self_exe(void)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    return strdup(buf);
}

char *launch_tempdir(const char *name)
{
    const char *tmpdir = getenv("TMPDIR");
    tftap_buf t = TFTAP_BUF_INIT;
    tftap_buf_printf(&t, "%s/tftap-%s-XXXXXX", tmpdir && tmpdir[0] ? tmpdir : "/tmp", name);
    tftap_buf_cstr(&t);
    char *dir = tftap_buf_failed(&t) ? NULL : tftap_buf_take(&t, NULL);
    tftap_buf_done(&t);
    if (dir == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    if (mkdtemp(dir) == NULL) {
        int e = errno;
        free(dir);
        errno = e;
        return NULL;
    }
    return dir;
}

char *launch_joinpath(const char *a, const char *b)
{
    tftap_buf buf = TFTAP_BUF_INIT;
    tftap_buf_printf(&buf, "%s/%s", a, b);
    tftap_buf_cstr(&buf);
    if (tftap_buf_failed(&buf)) {
        tftap_buf_done(&buf);
        return NULL;
    }
    return tftap_buf_take(&buf, NULL);
}

static const char *home_dir(void)
{
    const char *h = getenv("HOME");
    if (h != NULL && h[0] != '\0')
        return h;
    struct passwd *pw = getpwuid(getuid());
    return pw ? pw->pw_dir : NULL;
}

/* An executable in dir named terraform-provider-<type> or
 * terraform-provider-<type>_<anything>, resolved to its real path. */
static char *find_binary(const char *dir, const char *type)
{
    char prefix[256];
    int plen = snprintf(prefix, sizeof prefix, "terraform-provider-%s", type);
    if (plen < 0 || (size_t)plen >= sizeof prefix)
        return NULL;
    DIR *d = opendir(dir);
    if (d == NULL)
        return NULL;
    char *found = NULL;
    struct dirent *e;
    while (found == NULL && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, (size_t)plen) != 0 ||
            (e->d_name[plen] != '\0' && e->d_name[plen] != '_'))
            continue;
        char *p = launch_joinpath(dir, e->d_name);
        struct stat st;
        if (p != NULL && stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0)
            found = realpath(p, NULL);
        free(p);
    }
    closedir(d);
    return found;
}

int launch_is_self(const char *path)
{
    struct stat a, b;
    return path != NULL && stat(path, &a) == 0 && stat("/proc/self/exe", &b) == 0 &&
           a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

char *launch_shim_meta_path(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        return NULL;
    tftap_buf b = TFTAP_BUF_INIT;
    tftap_buf_append(&b, path, (size_t)(slash - path));
    tftap_buf_puts(&b, "/tftap-shim.json");
    tftap_buf_cstr(&b);
    if (tftap_buf_failed(&b) || access(b.data, F_OK) != 0) {
        tftap_buf_done(&b);
        return NULL;
    }
    /* A provider binary that happens to sit beside such a file is still a
     * provider: only a script that runs `tftap shim` is a shim. */
    char head[4096];
    size_t n = 0;
    FILE *f = fopen(path, "rb");
    if (f != NULL) {
        n = fread(head, 1, sizeof head - 1, f);
        fclose(f);
    }
    head[n] = '\0';
    if (n < 2 || head[0] != '#' || head[1] != '!' || strstr(head, " shim ") == NULL) {
        tftap_buf_done(&b);
        return NULL;
    }
    return tftap_buf_take(&b, NULL);
}

/* dir/<addr>/<version>/<os_arch>: the unpacked layout every provider
 * directory (.terraform/providers, plugin cache, mirrors) shares. */
static char *find_in_layout(const char *dir, const char *addr, const char *version,
                            const char *type)
{
    tftap_buf p = TFTAP_BUF_INIT;
    tftap_buf_printf(&p, "%s/%s/%s/%s", dir, addr, version, PLATFORM);
    char *found = tftap_buf_failed(&p) ? NULL : find_binary(tftap_buf_cstr(&p), type);
    tftap_buf_done(&p);
    return found;
}

/* "ns/type" or "host/ns/type" -> "host/ns/type"; NULL if malformed. */
static char *full_address(const char *addr, const char *cli)
{
    int slashes = 0;
    for (const char *p = addr; *p; p++)
        slashes += *p == '/';
    if (slashes == 2)
        return strdup(addr);
    if (slashes != 1)
        return NULL;
    return launch_joinpath(
        strcmp(cli, "terraform") == 0 ? "registry.terraform.io" : "registry.opentofu.org", addr);
}

static const char *addr_type(const char *addr)
{
    const char *s = strrchr(addr, '/');
    return s ? s + 1 : addr;
}

/* ---- discovery ----------------------------------------------------------- */

struct locked {
    char *addr, *version;
};

struct override {
    char *key, *dir; /* as written in the user's config */
};

struct scan {
    /* lock file */
    struct locked *locked;
    size_t nlocked, caplocked;
    /* CLI config */
    char *plugin_cache_dir;
    char *mirrors[MAX_MIRRORS];
    size_t nmirrors;
    struct override *ovr;
    size_t novr, capovr;
    int failed;
};

static void lock_block(void *ctx, const char *const *path, int depth, const struct tok *first,
                       const struct tok *open, const struct tok *close)
{
    (void)path;
    (void)open;
    (void)close;
    struct scan *s = ctx;
    /* provider "ADDR" { ... }: the label follows the block name. */
    if (depth != 0 || first->kind != TOK_IDENT || strcmp(first->text, "provider") != 0)
        return;
    const struct tok *label = first + 1;
    if (label->kind != TOK_STRING)
        return;
    /* The version attribute was seen first and parked with a NULL addr. */
    if (s->nlocked > 0 && s->locked[s->nlocked - 1].addr == NULL) {
        s->locked[s->nlocked - 1].addr = strdup(label->text);
        if (s->locked[s->nlocked - 1].addr == NULL)
            s->failed = 1;
    }
}

static void lock_attr(void *ctx, const char *const *path, int depth, const struct tok *key,
                      const struct tok *value)
{
    struct scan *s = ctx;
    if (depth != 1 || path[0] == NULL || strcmp(path[0], "provider") != 0 ||
        key->kind != TOK_IDENT || strcmp(key->text, "version") != 0 || value->kind != TOK_STRING)
        return;
    if (s->nlocked == s->caplocked) {
        size_t cap = s->caplocked ? s->caplocked * 2 : 8;
        struct locked *v = realloc(s->locked, cap * sizeof *v);
        if (v == NULL) {
            s->failed = 1;
            return;
        }
        s->locked = v;
        s->caplocked = cap;
    }
    s->locked[s->nlocked].addr = NULL;
    s->locked[s->nlocked].version = strdup(value->text);
    if (s->locked[s->nlocked].version == NULL)
        s->failed = 1;
    s->nlocked++;
}

static void config_attr(void *ctx, const char *const *path, int depth, const struct tok *key,
                        const struct tok *value)
{
    struct scan *s = ctx;
    if (value->kind != TOK_STRING || key->text == NULL)
        return;
    if (depth == 0 && strcmp(key->text, "plugin_cache_dir") == 0) {
        free(s->plugin_cache_dir);
        if ((s->plugin_cache_dir = strdup(value->text)) == NULL)
            s->failed = 1;
    } else if (depth == 2 && path[0] && strcmp(path[0], "provider_installation") == 0 && path[1] &&
               strcmp(path[1], "filesystem_mirror") == 0 && strcmp(key->text, "path") == 0) {
        if (s->nmirrors < MAX_MIRRORS && (s->mirrors[s->nmirrors++] = strdup(value->text)) == NULL)
            s->failed = 1;
    } else if (depth == 2 && path[0] && strcmp(path[0], "provider_installation") == 0 && path[1] &&
               strcmp(path[1], "dev_overrides") == 0) {
        if (s->novr == s->capovr) {
            size_t cap = s->capovr ? s->capovr * 2 : 8;
            struct override *v = realloc(s->ovr, cap * sizeof *v);
            if (v == NULL) {
                s->failed = 1;
                return;
            }
            s->ovr = v;
            s->capovr = cap;
        }
        s->ovr[s->novr].key = strdup(key->text);
        s->ovr[s->novr].dir = strdup(value->text);
        if (s->ovr[s->novr].key == NULL || s->ovr[s->novr].dir == NULL)
            s->failed = 1;
        s->novr++;
    }
}

static void scan_done(struct scan *s)
{
    for (size_t i = 0; i < s->nlocked; i++) {
        free(s->locked[i].addr);
        free(s->locked[i].version);
    }
    free(s->locked);
    for (size_t i = 0; i < s->novr; i++) {
        free(s->ovr[i].key);
        free(s->ovr[i].dir);
    }
    free(s->ovr);
    for (size_t i = 0; i < s->nmirrors; i++)
        free(s->mirrors[i]);
    free(s->plugin_cache_dir);
}

static int set_add(struct launch_providers *set, const char *addr, const char *version,
                   char *binary)
{
    if (set->n == set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 8;
        struct launch_provider *v = realloc(set->v, cap * sizeof *v);
        if (v == NULL)
            goto fail;
        set->v = v;
        set->cap = cap;
    }
    struct launch_provider *p = &set->v[set->n];
    p->addr = strdup(addr);
    p->type = strdup(addr_type(addr));
    p->version = version ? strdup(version) : NULL;
    p->binary = binary;
    if (p->addr == NULL || p->type == NULL || (version && p->version == NULL)) {
        free(p->addr);
        free(p->type);
        free(p->version);
        goto fail;
    }
    set->n++;
    return 0;
fail:
    free(binary);
    return TFTAP_ENOMEM;
}

/* *bin is what the CLI would start for addr. When it is one of tftap's
 * own shims (a config written by `tftap wrap`, read again by wrap or run),
 * the real provider it stands for takes its place: a shim never starts a
 * shim. *standin is 1 when that shim stood in for a locked provider (its
 * json has a version; the caller may look the provider up where init put
 * it instead). *bin becomes NULL when the real provider is gone. Returns
 * 0, or TFTAP_EINVAL with a one-line reason in err when the chain leads
 * back to tftap (tftap itself, or a shim whose provider is a shim). */
static int resolve_shim(struct launch_providers *set, const char *addr, char **bin, int *standin,
                        tftap_buf *err)
{
    const char *config = set->user_config ? set->user_config : "the CLI config";
    proxy_meta m;
    int rc = 0;

    *standin = 0;
    char *meta_path = launch_shim_meta_path(*bin);
    if (meta_path == NULL) {
        if (!launch_is_self(*bin))
            return 0;
        tftap_buf_printf(err, "%s: %s is tftap itself, not a provider; fix or unset %s", addr, *bin,
                         config);
        return TFTAP_EINVAL;
    }
    memset(&m, 0, sizeof m);
    tftap_buf why = TFTAP_BUF_INIT;
    if (proxy_meta_load(meta_path, &m, &why) != 0) {
        tftap_buf_printf(err, "%s: %s is a tftap shim (%s); unset TF_CLI_CONFIG_FILE (%s)", addr,
                         *bin, tftap_buf_cstr(&why), config);
        rc = TFTAP_EINVAL;
        goto done;
    }
    set->shims++;
    char *inner = launch_shim_meta_path(m.binary);
    int again = inner != NULL || launch_is_self(m.binary);
    free(inner);
    if (again) {
        tftap_buf_printf(err,
                         "%s: the tftap shim %s stands for %s, which is tftap again; unset "
                         "TF_CLI_CONFIG_FILE (%s) and wrap again",
                         addr, *bin, m.binary, config);
        rc = TFTAP_EINVAL;
        goto done;
    }
    *standin = m.version != NULL;
    free(*bin);
    *bin = access(m.binary, X_OK) == 0 ? realpath(m.binary, NULL) : NULL;
done:
    tftap_buf_done(&why);
    proxy_meta_done(&m);
    free(meta_path);
    return rc;
}

/* The CLI config file the command would read, or NULL for none. */
static char *user_config_path(const char *cli)
{
    const char *e = getenv("TF_CLI_CONFIG_FILE");
    if (e != NULL && e[0] != '\0')
        return strdup(e);
    e = getenv("TERRAFORM_CONFIG");
    if (e != NULL && e[0] != '\0')
        return strdup(e);
    const char *home = home_dir();
    if (home == NULL)
        return NULL;
    if (strcmp(cli, "terraform") != 0) {
        char *p = launch_joinpath(home, ".tofurc");
        if (p != NULL && access(p, F_OK) == 0)
            return p;
        free(p);
    }
    return launch_joinpath(home, ".terraformrc");
}

static char *locate(const struct scan *s, const char *workdir, const char *cli, const char *addr,
                    const char *version)
{
    const char *type = addr_type(addr);
    const char *data_dir = getenv("TF_DATA_DIR");
    char *found = NULL;
    tftap_buf b = TFTAP_BUF_INIT;

    /* 1. where init installed it */
    if (data_dir != NULL && data_dir[0] == '/')
        tftap_buf_printf(&b, "%s/providers", data_dir);
    else
        tftap_buf_printf(&b, "%s/%s/providers", workdir,
                         data_dir && data_dir[0] ? data_dir : ".terraform");
    if (!tftap_buf_failed(&b))
        found = find_in_layout(tftap_buf_cstr(&b), addr, version, type);
    tftap_buf_done(&b);
    if (found)
        return found;

    /* 2. the plugin cache */
    const char *cache = getenv("TF_PLUGIN_CACHE_DIR");
    if (cache == NULL || cache[0] == '\0')
        cache = s->plugin_cache_dir;
    if (cache != NULL && (found = find_in_layout(cache, addr, version, type)) != NULL)
        return found;

    /* 3. filesystem mirrors, named and implied */
    for (size_t i = 0; i < s->nmirrors; i++)
        if ((found = find_in_layout(s->mirrors[i], addr, version, type)) != NULL)
            return found;
    const char *home = home_dir();
    const char *prog = strcmp(cli, "terraform") == 0 ? "terraform" : "opentofu";
    const char *xdg = getenv("XDG_DATA_HOME");
    const char *implied[6] = {NULL};
    char *owned[3] = {NULL};
    if (home) {
        owned[0] = launch_joinpath(home, ".terraform.d/plugins");
        implied[0] = owned[0];
    }
    tftap_buf x = TFTAP_BUF_INIT;
    if (xdg && xdg[0])
        tftap_buf_printf(&x, "%s/%s/plugins", xdg, prog);
    else if (home)
        tftap_buf_printf(&x, "%s/.local/share/%s/plugins", home, prog);
    if (x.len && !tftap_buf_failed(&x))
        implied[1] = owned[1] = tftap_buf_take(&x, NULL);
    tftap_buf_done(&x);
    implied[2] = strcmp(prog, "terraform") == 0 ? "/usr/local/share/terraform/plugins"
                                                : "/usr/local/share/opentofu/plugins";
    implied[3] = strcmp(prog, "terraform") == 0 ? "/usr/share/terraform/plugins"
                                                : "/usr/share/opentofu/plugins";
    owned[2] = launch_joinpath(workdir, "terraform.d/plugins");
    implied[4] = owned[2];
    for (size_t i = 0; i < 5 && found == NULL; i++)
        if (implied[i])
            found = find_in_layout(implied[i], addr, version, type);
    for (size_t i = 0; i < 3; i++)
        free(owned[i]);
    return found;
}

int launch_discover(const char *workdir, const char *cli, struct launch_providers *set,
                    tftap_buf *err)
{
    struct scan s;
    struct toks lock_toks = {0}, cfg_toks = {0};
    tftap_buf lock = TFTAP_BUF_INIT;
    char *lock_path = NULL;
    int rc = 0;

    memset(set, 0, sizeof *set);
    memset(&s, 0, sizeof s);

    /* The user's CLI config: kept whole in the config we write. */
    set->user_config = user_config_path(cli);
    if (set->user_config != NULL) {
        rc = tftap_read_file(set->user_config, CONFIG_MAX_BYTES, &set->user_text);
        if (rc == TFTAP_EIO && errno == ENOENT) {
            rc = 0;
        } else if (rc != 0) {
            tftap_buf_printf(err, "cannot read CLI config %s: %s", set->user_config,
                             rc == TFTAP_EIO ? strerror(errno) : tftap_strerror(rc));
            set->unreadable = 1;
            goto cleanup;
        }
        if ((rc = hcl_tokenize(tftap_buf_cstr(&set->user_text), set->user_text.len, &cfg_toks)) !=
            0) {
            tftap_buf_printf(err, "cannot read CLI config %s: %s", set->user_config,
                             tftap_strerror(rc));
            set->unreadable = 1;
            goto cleanup;
        }
        hcl_walk(&cfg_toks, &(struct hcl_walk_cb){.attr = config_attr, .ctx = &s});
    }

    /* The lock file: which providers at which versions. */
    if ((lock_path = launch_joinpath(workdir, ".terraform.lock.hcl")) == NULL) {
        rc = TFTAP_ENOMEM;
        goto cleanup;
    }
    rc = tftap_read_file(lock_path, CONFIG_MAX_BYTES, &lock);
    if (rc == TFTAP_EIO && errno == ENOENT) {
        rc = 0;
    } else if (rc != 0) {
        tftap_buf_printf(err, "cannot read %s: %s", lock_path,
                         rc == TFTAP_EIO ? strerror(errno) : tftap_strerror(rc));
        set->unreadable = 1;
        goto cleanup;
    } else {
        if ((rc = hcl_tokenize(tftap_buf_cstr(&lock), lock.len, &lock_toks)) != 0) {
            tftap_buf_printf(err, "cannot read %s: %s", lock_path, tftap_strerror(rc));
            set->unreadable = 1;
            goto cleanup;
        }
        hcl_walk(&lock_toks,
                 &(struct hcl_walk_cb){.attr = lock_attr, .block = lock_block, .ctx = &s});
    }
    if (s.failed) {
        rc = TFTAP_ENOMEM;
        goto cleanup;
    }

    /* The user's own dev overrides come first: the CLI uses them over the lock. */
    for (size_t i = 0; i < s.novr; i++) {
        char *addr = full_address(s.ovr[i].key, cli);
        if (addr == NULL)
            continue;
        char *bin = find_binary(s.ovr[i].dir, addr_type(addr));
        int standin = 0;
        if (bin != NULL && (rc = resolve_shim(set, addr, &bin, &standin, err)) != 0) {
            free(bin);
            free(addr);
            goto cleanup;
        }
        if (standin) {
            /* An earlier wrap's shim for a locked provider: found below,
             * where init installed it, like any other. */
            free(bin);
            bin = NULL;
        }
        if (bin != NULL)
            rc = set_add(set, addr, NULL, bin);
        free(addr);
        if (rc != 0)
            goto cleanup;
    }
    for (size_t i = 0; i < s.nlocked; i++) {
        const struct locked *l = &s.locked[i];
        if (l->addr == NULL || l->version == NULL)
            continue;
        int overridden = 0;
        for (size_t j = 0; j < set->n; j++)
            overridden |= strcmp(set->v[j].addr, l->addr) == 0;
        if (overridden)
            continue;
        char *bin = locate(&s, workdir, cli, l->addr, l->version);
        int standin = 0;
        if (bin != NULL && (rc = resolve_shim(set, l->addr, &bin, &standin, err)) != 0) {
            free(bin);
            goto cleanup;
        }
        if (bin == NULL) {
            if (set->missing++ == 0 && (set->missing_first = strdup(l->addr)) == NULL) {
                rc = TFTAP_ENOMEM;
                goto cleanup;
            }
            continue;
        }
        if ((rc = set_add(set, l->addr, l->version, bin)) != 0)
            goto cleanup;
    }

cleanup:
    if (rc == TFTAP_ENOMEM && err->len == 0)
        tftap_buf_puts(err, "out of memory");
    else if (rc != 0 && err->len == 0)
        tftap_buf_printf(err, "cannot read the CLI config or lock file: %s", tftap_strerror(rc));
    hcl_toks_done(&lock_toks);
    hcl_toks_done(&cfg_toks);
    tftap_buf_done(&lock);
    free(lock_path);
    scan_done(&s);
    return rc;
}

int launch_providers_replace(struct launch_providers *set, const struct launch_provider *v,
                             size_t n)
{
    for (size_t i = 0; i < set->n; i++) {
        free(set->v[i].addr);
        free(set->v[i].type);
        free(set->v[i].version);
        free(set->v[i].binary);
    }
    set->n = 0;
    set->missing = 0;
    free(set->missing_first);
    set->missing_first = NULL;
    for (size_t i = 0; i < n; i++) {
        char *bin = strdup(v[i].binary);
        if (bin == NULL || set_add(set, v[i].addr, v[i].version, bin) != 0)
            return TFTAP_ENOMEM;
    }
    return 0;
}

void launch_providers_done(struct launch_providers *set)
{
    if (set == NULL)
        return;
    for (size_t i = 0; i < set->n; i++) {
        free(set->v[i].addr);
        free(set->v[i].type);
        free(set->v[i].version);
        free(set->v[i].binary);
    }
    free(set->v);
    free(set->missing_first);
    free(set->user_config);
    tftap_buf_done(&set->user_text);
    memset(set, 0, sizeof *set);
}

/* ---- writing shims and the CLI config ------------------------------------- */

/* A quoted string for the CLI configuration. Not analysis_hcl_string: the
 * CLI configuration is read by HCL 1, which has no templates, so "${"
 * stays literal there and escaping it as "$${" would change the path. */
static void put_hcl_string(tftap_buf *b, const char *s)
{
    tftap_buf_putc(b, '"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            tftap_buf_putc(b, '\\');
        tftap_buf_putc(b, *s);
    }
    tftap_buf_putc(b, '"');
}

void launch_sh_quote(tftap_buf *b, const char *s)
{
    tftap_buf_putc(b, '\'');
    for (; *s; s++) {
        if (*s == '\'')
            tftap_buf_puts(b, "'\\''");
        else
            tftap_buf_putc(b, *s);
    }
    tftap_buf_putc(b, '\'');
}

static int write_file(const char *path, const tftap_buf *content, mode_t mode, tftap_buf *err)
{
    if (tftap_buf_failed(content)) {
        tftap_buf_puts(err, "out of memory");
        return TFTAP_ENOMEM;
    }
    FILE *f = fopen(path, "w");
    if (f == NULL)
        goto fail;
    if (fwrite(content->data ? content->data : "", 1, content->len, f) != content->len ||
        fchmod(fileno(f), mode) != 0) {
        fclose(f);
        goto fail;
    }
    if (fclose(f) != 0)
        goto fail;
    return 0;
fail:
    tftap_buf_printf(err, "cannot write %s: %s", path, strerror(errno));
    return TFTAP_EIO;
}

/* The shim script's name: the real binary's own name when it is one the CLI
 * accepts for this type (terraform-provider-<type>[_...]), so that what the
 * CLI prints about the plugin (e.g. "Stack trace from the ... plugin") reads
 * the same as without tftap; else terraform-provider-<type>. */
static int shim_name(const struct launch_provider *p, char *out, size_t size)
{
    const char *base = strrchr(p->binary, '/') ? strrchr(p->binary, '/') + 1 : p->binary;
    int n = snprintf(out, size, "terraform-provider-%s", p->type);
    if (n < 0 || (size_t)n >= size)
        return TFTAP_ELIMIT;
    if (strncmp(base, out, (size_t)n) == 0 && base[n] == '_' && strlen(base) < size &&
        strchr(base, '\'') == NULL)
        snprintf(out, size, "%s", base);
    return 0;
}

static char *shim_dir(const char *dir, size_t i)
{
    tftap_buf b = TFTAP_BUF_INIT;
    tftap_buf_printf(&b, "%s/p%zu", dir, i);
    tftap_buf_cstr(&b);
    if (tftap_buf_failed(&b)) {
        tftap_buf_done(&b);
        return NULL;
    }
    return tftap_buf_take(&b, NULL);
}

/* The user's text with our dev_overrides merged into its
 * provider_installation block (their own dev_overrides block is replaced
 * by the merged one; their other methods stay as they are). */
struct cfg_spans {
    int have_pi;
    size_t pi_open; /* just after provider_installation's "{" */
    int have_do;
    size_t do_start, do_end; /* the user's dev_overrides block */
};

static void span_block(void *ctx, const char *const *path, int depth, const struct tok *first,
                       const struct tok *open, const struct tok *close)
{
    struct cfg_spans *sp = ctx;
    if (first->text == NULL)
        return;
    if (depth == 0 && strcmp(first->text, "provider_installation") == 0 && !sp->have_pi) {
        sp->have_pi = 1;
        sp->pi_open = open->end;
    } else if (depth == 1 && path[0] && strcmp(path[0], "provider_installation") == 0 &&
               strcmp(first->text, "dev_overrides") == 0 && !sp->have_do) {
        sp->have_do = 1;
        sp->do_start = first->start;
        sp->do_end = close->end;
    }
}

#define WRITTEN_BY "  # written by tftap: every wrapped provider goes through its shim\n"

struct ovr_keep {
    const struct launch_providers *set;
    const char *cli;
    const char *text;
    tftap_buf *out;
};

/* A dev_overrides directory written by tftap wrap: never kept as it is
 * (it would send the CLI to a shim that our own shim then starts). */
static int is_shim_dir(const struct tok *value)
{
    if (value->kind != TOK_STRING || value->text == NULL)
        return 0;
    char *p = launch_joinpath(value->text, "tftap-shim.json");
    int yes = p != NULL && access(p, F_OK) == 0;
    free(p);
    return yes;
}

/* Re-emit a user override we are not wrapping, verbatim (not our shims). */
static void keep_override(void *ctx, const char *const *path, int depth, const struct tok *key,
                          const struct tok *value)
{
    struct ovr_keep *k = ctx;
    if (depth != 2 || !path[0] || strcmp(path[0], "provider_installation") != 0 || !path[1] ||
        strcmp(path[1], "dev_overrides") != 0 || key->text == NULL)
        return;
    char *addr = full_address(key->text, k->cli);
    int wrapped = 0;
    for (size_t i = 0; addr && i < k->set->n; i++)
        wrapped |= strcmp(k->set->v[i].addr, addr) == 0;
    free(addr);
    if (wrapped || is_shim_dir(value))
        return;
    tftap_buf_puts(k->out, "    ");
    tftap_buf_append(k->out, k->text + key->start, key->end - key->start);
    tftap_buf_puts(k->out, " = ");
    tftap_buf_append(k->out, k->text + value->start, value->end - value->start);
    tftap_buf_putc(k->out, '\n');
}

static int build_config(const struct launch_providers *set, const char *dir, const char *cli,
                        tftap_buf *out)
{
    const char *text = set->user_text.len ? set->user_text.data : "";
    size_t len = set->user_text.len;
    struct toks t = {0};
    struct cfg_spans sp = {0};
    tftap_buf block = TFTAP_BUF_INIT;
    int rc = hcl_tokenize(text, len, &t);
    if (rc != 0)
        goto cleanup;
    hcl_walk(&t, &(struct hcl_walk_cb){.block = span_block, .ctx = &sp});

    tftap_buf_puts(&block, "\n" WRITTEN_BY "  dev_overrides {\n");
    for (size_t i = 0; i < set->n; i++) {
        char *sd = shim_dir(dir, i);
        if (sd == NULL) {
            rc = TFTAP_ENOMEM;
            goto cleanup;
        }
        tftap_buf_puts(&block, "    ");
        put_hcl_string(&block, set->v[i].addr);
        tftap_buf_puts(&block, " = ");
        put_hcl_string(&block, sd);
        tftap_buf_putc(&block, '\n');
        free(sd);
    }
    struct ovr_keep k = {set, cli, text, &block};
    hcl_walk(&t, &(struct hcl_walk_cb){.attr = keep_override, .ctx = &k});
    tftap_buf_puts(&block, "  }\n");

    if (sp.have_pi) {
        size_t cut_start = sp.have_do ? sp.do_start : sp.pi_open;
        size_t cut_end = sp.have_do ? sp.do_end : sp.pi_open;
        /* Our own config wrapped again: its block goes whole, comment and
         * line ends included, so that wrapping it again changes nothing. */
        size_t wl = strlen(WRITTEN_BY);
        if (sp.have_do && cut_start >= sp.pi_open + wl + 3 &&
            memcmp(text + cut_start - wl - 3, "\n" WRITTEN_BY "  ", wl + 3) == 0) {
            cut_start -= wl + 3;
            if (cut_end < len && text[cut_end] == '\n')
                cut_end++;
        }
        tftap_buf_append(out, text, sp.pi_open);
        tftap_buf_append(out, block.data, block.len);
        tftap_buf_append(out, text + sp.pi_open, cut_start - sp.pi_open);
        tftap_buf_append(out, text + cut_end, len - cut_end);
    } else {
        tftap_buf_append(out, text, len);
        /* Without a provider_installation block the CLI installs directly;
         * keep that for every provider we do not wrap. */
        tftap_buf_puts(out, "\nprovider_installation {");
        tftap_buf_append(out, block.data, block.len);
        tftap_buf_puts(out, "  direct {}\n}\n");
    }
    rc = tftap_buf_failed(out) || tftap_buf_failed(&block) ? TFTAP_ENOMEM : 0;
cleanup:
    tftap_buf_done(&block);
    hcl_toks_done(&t);
    return rc;
}

static const char *cli_of(const struct launch_providers *set)
{
    /* Addresses carry their host; the CLI name only matters for short
     * override keys, where the user config's own spelling is kept. */
    for (size_t i = 0; i < set->n; i++)
        if (strncmp(set->v[i].addr, "registry.terraform.io/", 22) == 0)
            return "terraform";
    return "tofu";
}

int launch_wrap_write_config(const struct launch_providers *set, const char *dir,
                             char **config_path, tftap_buf *err)
{
    tftap_buf b = TFTAP_BUF_INIT;
    char *path = NULL;
    int rc = build_config(set, dir, cli_of(set), &b);
    *config_path = NULL;
    if (rc != 0 || (path = launch_joinpath(dir, "tftap.tfrc")) == NULL) {
        rc = TFTAP_ENOMEM;
        tftap_buf_puts(err, "out of memory");
    } else if ((rc = write_file(path, &b, 0600, err)) == 0) {
        *config_path = path;
        path = NULL;
    }
    free(path);
    tftap_buf_done(&b);
    return rc;
}

int launch_wrap_write(const struct launch_providers *set, const char *dir,
                      const struct launch_wrap_opts *opts, char **config_path, tftap_buf *err)
{
    tftap_buf b = TFTAP_BUF_INIT;
    char *sd = NULL, *path = NULL;
    int rc = 0;

    *config_path = NULL;
    for (size_t i = 0; i < set->n; i++) {
        const struct launch_provider *p = &set->v[i];
        free(sd);
        if ((sd = shim_dir(dir, i)) == NULL)
            goto nomem;
        if (mkdir(sd, 0700) != 0 && errno != EEXIST) {
            tftap_buf_printf(err, "cannot create %s: %s", sd, strerror(errno));
            rc = TFTAP_EIO;
            goto cleanup;
        }
        /* tftap-shim.json: what the shim needs to stand in for the provider. */
        tftap_buf_reset(&b);
        tftap_buf_puts(&b, "{\"provider\": ");
        tftap_buf_json_string(&b, p->addr, strlen(p->addr));
        tftap_buf_puts(&b, ", \"version\": ");
        if (p->version)
            tftap_buf_json_string(&b, p->version, strlen(p->version));
        else
            tftap_buf_puts(&b, "null");
        tftap_buf_puts(&b, ", \"binary\": ");
        tftap_buf_json_string(&b, p->binary, strlen(p->binary));
        tftap_buf_puts(&b, ", \"db\": ");
        tftap_buf_json_string(&b, opts->db, strlen(opts->db));
        tftap_buf_printf(&b, ", \"record_sensitive\": %s, \"keep_raw\": %s",
                         opts->record_sensitive ? "true" : "false",
                         opts->keep_raw ? "true" : "false");
        if (opts->otlp != NULL) {
            tftap_buf_puts(&b, ", \"otlp\": ");
            tftap_buf_json_string(&b, opts->otlp, strlen(opts->otlp));
        }
        if (opts->otlp_values)
            tftap_buf_puts(&b, ", \"otlp_values\": true");
        tftap_buf_puts(&b, "}\n");
        free(path);
        if ((path = launch_joinpath(sd, "tftap-shim.json")) == NULL)
            goto nomem;
        if ((rc = write_file(path, &b, 0600, err)) != 0)
            goto cleanup;
        char *meta = path;
        path = NULL;

        /* The script the CLI starts believing it is the provider. */
        tftap_buf_reset(&b);
        tftap_buf_puts(&b, "#!/bin/sh\n# tftap shim for ");
        tftap_buf_puts(&b, p->addr);
        tftap_buf_puts(&b, "\nexec ");
        launch_sh_quote(&b, opts->tftap_exe);
        tftap_buf_puts(&b, " shim ");
        launch_sh_quote(&b, meta);
        tftap_buf_puts(&b, " \"$@\"\n");
        free(meta);
        tftap_buf_cstr(&b);
        char name[300];
        if (shim_name(p, name, sizeof name) != 0) {
            tftap_buf_printf(err, "provider type too long: %s", p->addr);
            rc = TFTAP_ELIMIT;
            goto cleanup;
        }
        if ((path = launch_joinpath(sd, name)) == NULL)
            goto nomem;
        if ((rc = write_file(path, &b, 0700, err)) != 0)
            goto cleanup;
    }

    rc = launch_wrap_write_config(set, dir, config_path, err);
    goto cleanup;

nomem:
    rc = TFTAP_ENOMEM;
    tftap_buf_puts(err, "out of memory");
cleanup:
    free(sd);
    free(path);
    tftap_buf_done(&b);
    return rc;
}

void launch_wrap_clean(const struct launch_providers *set, const char *dir)
{
    for (size_t i = 0; i < set->n; i++) {
        char *sd = shim_dir(dir, i);
        if (sd == NULL)
            continue;
        char name[300];
        char *a = launch_joinpath(sd, "tftap-shim.json");
        char *b = shim_name(&set->v[i], name, sizeof name) == 0 ? launch_joinpath(sd, name) : NULL;
        if (a)
            unlink(a);
        if (b)
            unlink(b);
        rmdir(sd);
        free(a);
        free(b);
        free(sd);
    }
    char *c = launch_joinpath(dir, "tftap.tfrc");
    if (c)
        unlink(c);
    free(c);
}
