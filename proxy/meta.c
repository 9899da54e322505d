/* proxy: a shim directory's tftap-shim.json. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "proxy/proxy.h"

#define META_MAX_BYTES (1u << 20)

static int take_string(const cJSON *root, const char *key, int required, char **out, tftap_buf *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    *out = NULL;
    if (v == NULL || cJSON_IsNull(v)) {
        if (!required)
            return 0;
        if (err)
            tftap_buf_printf(err, "shim metadata lacks \"%s\"", key);
        return TFTAP_EDECODE;
    }
    if (!cJSON_IsString(v) || v->valuestring == NULL || (required && v->valuestring[0] == '\0')) {
        if (err)
            tftap_buf_printf(err, "shim metadata: \"%s\" must be a non-empty string", key);
        return TFTAP_EDECODE;
    }
    *out = strdup(v->valuestring);
    return *out == NULL ? TFTAP_ENOMEM : 0;
}

static int take_bool(const cJSON *root, const char *key, int *out, tftap_buf *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    *out = 0;
    if (v == NULL || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsBool(v)) {
        if (err)
            tftap_buf_printf(err, "shim metadata: \"%s\" must be true or false", key);
        return TFTAP_EDECODE;
    }
    *out = cJSON_IsTrue(v);
    return 0;
}

int proxy_meta_load(const char *path, proxy_meta *meta, tftap_buf *err)
{
    tftap_buf text = TFTAP_BUF_INIT;
    cJSON *root = NULL;
    int rc;

    memset(meta, 0, sizeof *meta);
    rc = tftap_read_file(path, META_MAX_BYTES, &text);
    if (rc != 0) {
        if (err)
            tftap_buf_printf(err, "cannot read shim metadata %s: %s", path,
                             rc == TFTAP_EIO ? strerror(errno) : tftap_strerror(rc));
        goto cleanup;
    }
    root = cJSON_ParseWithLength(tftap_buf_cstr(&text), text.len);
    if (root == NULL || !cJSON_IsObject(root)) {
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
        (rc = take_bool(root, "keep_raw", &meta->keep_raw, err)) != 0)
        goto cleanup;
    if (meta->version != NULL && meta->version[0] == '\0') {
        free(meta->version);
        meta->version = NULL;
    }

cleanup:
    cJSON_Delete(root);
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
    memset(meta, 0, sizeof *meta);
}
