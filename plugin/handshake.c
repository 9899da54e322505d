/* plugin: go-plugin's handshake line and the environment it travels with. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "plugin/plugin.h"

extern char **environ;

const char *plugin_env_get(char *const *envp, const char *name)
{
    size_t n = strlen(name);
    if (envp == NULL)
        envp = environ;
    for (; *envp != NULL; envp++)
        if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
            return *envp + n + 1;
    return NULL;
}

int plugin_cookie_ok(char *const *envp)
{
    const char *v = plugin_env_get(envp, PLUGIN_COOKIE_KEY);
    return v != NULL && strcmp(v, PLUGIN_COOKIE_VALUE) == 0;
}

/* Whether envp entry e is the variable key (which ends in '='). */
static int env_is(const char *e, const char *key)
{
    return strncmp(e, key, strlen(key)) == 0;
}

char **plugin_env_for_child(char *const *envp, const char *cert_pem, const char *socket_dir)
{
    static const char cert_key[] = "PLUGIN_CLIENT_CERT=", dir_key[] = "PLUGIN_UNIX_SOCKET_DIR=";
    size_t count = 0, bytes = 0;

    if (envp == NULL)
        envp = environ;
    for (char *const *e = envp; *e != NULL; e++) {
        if (env_is(*e, cert_key) || (socket_dir != NULL && env_is(*e, dir_key)))
            continue;
        count++;
        bytes += strlen(*e) + 1;
    }
    const char *add_key[2] = {cert_key, dir_key}, *add_val[2] = {cert_pem, socket_dir};
    for (int a = 0; a < 2; a++)
        if (add_val[a] != NULL) {
            count++;
            bytes += strlen(add_key[a]) + strlen(add_val[a]) + 1;
        }
    /* One block: the pointer vector, then the strings it points into. */
    size_t vec = (count + 1) * sizeof(char *);
    char **out = malloc(vec + bytes);
    if (out == NULL)
        return NULL;
    char *s = (char *)out + vec;
    size_t i = 0;
    for (char *const *e = envp; *e != NULL; e++) {
        if (env_is(*e, cert_key) || (socket_dir != NULL && env_is(*e, dir_key)))
            continue;
        size_t n = strlen(*e) + 1;
        memcpy(s, *e, n);
        out[i++] = s;
        s += n;
    }
    for (int a = 0; a < 2; a++) {
        if (add_val[a] == NULL)
            continue;
        size_t k = strlen(add_key[a]), n = strlen(add_val[a]) + 1;
        memcpy(s, add_key[a], k);
        memcpy(s + k, add_val[a], n);
        out[i++] = s;
        s += k + n;
    }
    out[i] = NULL;
    return out;
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d != NULL) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* A small decimal field: digits only, no sign, fits an int. */
static int parse_small_int(const char *s, size_t n, int *out)
{
    long v = 0;
    if (n == 0 || n > 6)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = (int)v;
    return 0;
}

int plugin_handshake_parse(const char *line, size_t len, plugin_handshake *hs, tftap_buf *err)
{
    const char *field[6];
    size_t flen[6];
    size_t nf = 0;
    const char *p = line, *end = line + len, *extra = NULL;

    memset(hs, 0, sizeof *hs);
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        end = line + --len;
    /* Six fields; whatever follows the sixth '|' is kept verbatim. */
    while (nf < 6) {
        const char *bar = memchr(p, '|', (size_t)(end - p));
        field[nf] = p;
        flen[nf] = (size_t)((bar != NULL ? bar : end) - p);
        nf++;
        if (bar == NULL)
            break;
        p = bar + 1;
        if (nf == 6)
            extra = p;
    }
    if (nf < 5) {
        if (err)
            tftap_buf_printf(err, "provider handshake has %zu fields, want at least 5", nf);
        return TFTAP_EPROTO;
    }
    if (memchr(line, '\0', len) != NULL) {
        if (err)
            tftap_buf_puts(err, "provider handshake contains a NUL byte");
        return TFTAP_EPROTO;
    }
    if (parse_small_int(field[0], flen[0], &hs->core_version) != 0 || hs->core_version != 1) {
        if (err)
            tftap_buf_printf(err, "provider handshake: unsupported core protocol '%.*s'",
                             (int)(flen[0] > 32 ? 32 : flen[0]), field[0]);
        return TFTAP_EPROTO;
    }
    if (parse_small_int(field[1], flen[1], &hs->proto_version) != 0) {
        if (err)
            tftap_buf_puts(err, "provider handshake: bad protocol version");
        return TFTAP_EPROTO;
    }
    hs->network = dup_n(field[2], flen[2]);
    hs->address = dup_n(field[3], flen[3]);
    hs->protocol = dup_n(field[4], flen[4]);
    hs->cert_b64 = nf >= 6 ? dup_n(field[5], flen[5]) : dup_n("", 0);
    hs->extra = extra != NULL ? dup_n(extra, (size_t)(end - extra)) : dup_n("", 0);
    if (!hs->network || !hs->address || !hs->protocol || !hs->cert_b64 || !hs->extra) {
        plugin_handshake_done(hs);
        return TFTAP_ENOMEM;
    }
    if (strcmp(hs->network, "unix") != 0 && strcmp(hs->network, "tcp") != 0) {
        if (err)
            tftap_buf_printf(err, "provider handshake: unsupported network '%.32s'", hs->network);
        goto bad;
    }
    if (strcmp(hs->protocol, "grpc") != 0) {
        if (err)
            tftap_buf_printf(err,
                             "provider handshake: protocol '%.32s' is not grpc (net/rpc "
                             "plugins are not supported)",
                             hs->protocol);
        goto bad;
    }
    if (hs->address[0] == '\0') {
        if (err)
            tftap_buf_puts(err, "provider handshake: empty address");
        goto bad;
    }
    /* go-plugin ignores a cert field of 50 characters or fewer (older
     * plugins put other data there); so do we. */
    if (strlen(hs->cert_b64) <= 50)
        hs->cert_b64[0] = '\0';
    return 0;

bad:
    plugin_handshake_done(hs);
    return TFTAP_EPROTO;
}

void plugin_handshake_done(plugin_handshake *hs)
{
    if (hs == NULL)
        return;
    free(hs->network);
    free(hs->address);
    free(hs->protocol);
    free(hs->cert_b64);
    free(hs->extra);
    memset(hs, 0, sizeof *hs);
}

int plugin_socket_path(char *const *envp, const char *prefix, tftap_buf *path, tftap_buf *err)
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    const char *dir = plugin_env_get(envp, "PLUGIN_UNIX_SOCKET_DIR");
    if (dir == NULL || dir[0] == '\0')
        dir = plugin_env_get(envp, "TMPDIR");
    if (dir == NULL || dir[0] == '\0')
        dir = "/tmp";
    for (int attempt = 0; attempt < 16; attempt++) {
        unsigned char rnd[12];
        if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
            if (err)
                tftap_buf_printf(err, "getrandom: %s", strerror(errno));
            return TFTAP_EIO;
        }
        tftap_buf_reset(path);
        tftap_buf_puts(path, dir);
        if (path->len > 0 && path->data[path->len - 1] != '/')
            tftap_buf_putc(path, '/');
        tftap_buf_puts(path, prefix);
        for (size_t i = 0; i < sizeof rnd; i++)
            tftap_buf_putc(path, alphabet[rnd[i] % (sizeof alphabet - 1)]);
        if (tftap_buf_failed(path))
            return TFTAP_ENOMEM;
        if (path->len >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
            if (err)
                tftap_buf_printf(err, "socket path %s is too long for a unix socket",
                                 tftap_buf_cstr(path));
            return TFTAP_ELIMIT;
        }
        struct stat st;
        if (lstat(tftap_buf_cstr(path), &st) != 0 && errno == ENOENT)
            return 0;
    }
    if (err)
        tftap_buf_printf(err, "cannot pick a free socket name in %s", dir);
    return TFTAP_EIO;
}
