/* proxy: a shim directory's tftap-shim.json. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/proxy.h"

#define META_MAX_BYTES (1u << 20)

static int take_string(const sj_node *root, const char *key, int required, char **out,
                       tftap_buf *err)
{
    const sj_node *v = sj_get(root, key);
    *out = NULL;
    if (v == NULL || v->kind == SJ_NULL) {
        if (!required)
            return 0;
        if (err)
            tftap_buf_printf(err, "shim metadata lacks \"%s\"", key);
        return TFTAP_EDECODE;
    }
    if (v->kind != SJ_STRING || memchr(v->str, '\0', v->len) || (required && v->len == 0)) {
        if (err)
            tftap_buf_printf(err, "shim metadata: \"%s\" must be a non-empty string", key);
        return TFTAP_EDECODE;
    }
    *out = strdup(v->str);
    return *out == NULL ? TFTAP_ENOMEM : 0;
}

static int take_bool(const sj_node *root, const char *key, int *out, tftap_buf *err)
{
    const sj_node *v = sj_get(root, key);
    *out = 0;
    if (v == NULL || v->kind == SJ_NULL)
        return 0;
    if (v->kind != SJ_BOOL) {
        if (err)
            tftap_buf_printf(err, "shim metadata: \"%s\" must be true or false", key);
        return TFTAP_EDECODE;
    }
    *out = v->boolean;
    return 0;
}

int proxy_meta_load(const char *path, proxy_meta *meta, tftap_buf *err)
{
    tftap_buf text = TFTAP_BUF_INIT;
    sj_doc *doc = NULL;
    const sj_node *root = NULL;
    int rc;

    memset(meta, 0, sizeof *meta);
    rc = tftap_read_file(path, META_MAX_BYTES, &text);
    if (rc != 0) {
        if (err)
            tftap_buf_printf(err, "cannot read shim metadata %s: %s", path,
                             rc == TFTAP_EIO ? strerror(errno) : tftap_strerror(rc));
        goto cleanup;
    }
    if (sj_parse(text.data, text.len, 0, &doc) == 0)
        root = sj_root(doc);
    if (root == NULL || root->kind != SJ_OBJECT) {
        if (err)
            tftap_buf_printf(err, "shim metadata %s is not a JSON object", path);
        rc = TFTAP_EDECODE;
        goto cleanup;
    }
    if ((rc = take_string(root, "provider", 1, &meta->provider, err)) != 0 ||
        (rc = take_string(root, "version", 0, &meta->version, err)) != 0 ||
        (rc = take_string(root, "binary", 1, &meta->binary, err)) != 0 ||
        (rc = take_string(root, "db", 0, &meta->db, err)) != 0 ||
        (rc = take_bool(root, "record_sensitive", &meta->record_sensitive, err)) != 0 ||
        (rc = take_bool(root, "keep_raw", &meta->keep_raw, err)) != 0 ||
        (rc = take_string(root, "otlp", 0, &meta->otlp, err)) != 0 ||
        (rc = take_bool(root, "otlp_values", &meta->otlp_values, err)) != 0)
        goto cleanup;
    if (meta->version != NULL && meta->version[0] == '\0') {
        free(meta->version);
        meta->version = NULL;
    }

cleanup:
    sj_free(doc);
    tftap_buf_done(&text);
    if (rc != 0)
        proxy_meta_done(meta);
    return rc;
}

void proxy_meta_done(proxy_meta *meta)
{
    if (meta == NULL)
        return;
    free(meta->provider);
    free(meta->version);
    free(meta->binary);
    free(meta->db);
    free(meta->otlp);
    memset(meta, 0, sizeof *meta);
}
