/* tftap schema SOURCE [PROVIDER]: a provider's schema in the format of
 * `tofu providers schema -json`; tftap schema diff A B: what changed. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "cli/cli.h"
#include "launch/launch.h"
#include "cli/cli_store.h"
#include "plugin/plugin.h"

static const char usage_text[] =
    "usage: tftap schema SOURCE [PROVIDER] [--db PATH] [--json]\n"
    "       tftap schema diff A B [--provider PROVIDER] [--db PATH] [--breaking]\n"
    "                             [--json | --format text|json|markdown]\n\n"
    "Print a provider's schema; with --json in the format of `tofu providers schema\n"
    "-json`, so tools that read that read this. SOURCE is one of:\n"
    "  a recorded run (an id, 'last', a bundle file, FILE:RUN): the schema its provider\n"
    "      sent (PROVIDER, an address or its last parts like tftap/tftest6, picks one of\n"
    "      several);\n"
    "  a provider binary: started with go-plugin's handshake, asked GetProviderSchema\n"
    "      and stopped (PROVIDER names the address printed, default\n"
    "      registry.opentofu.org/hashicorp/NAME from terraform-provider-NAME);\n"
    "  a `providers schema -json` file ('-' for standard input).\n\n"
    "schema diff lists resource types, data sources, ephemeral resources, functions and\n"
    "attributes added and removed, type changes, required/optional/computed changes,\n"
    "sensitive and write-only flips, deprecations, nesting modes and min/max items,\n"
    "each classified breaking or not; --breaking lists only the breaking ones.\n"
    "Exit status of schema diff: 0 same, 1 changed (with --breaking: breaking\n"
    "changes found), 2 error.\n";

#define SCHEMA_FILE_MAX ((size_t)512 << 20)
#define SCHEMA_START_TIMEOUT_MS 60000

struct run_pick {
    const char *want;
    tftap_buf entry, address, why;
    int found, many, rc;
};

static int suffix_match(const char *addr, const char *want)
{
    size_t a = strlen(addr), w = strlen(want);
    return strcmp(addr, want) == 0 ||
           (a > w && strcmp(addr + a - w, want) == 0 && addr[a - w - 1] == '/');
}

static int each_schema(void *ctx, const store_schema_row *r)
{
    struct run_pick *p = ctx;
    const char *addr = r->provider ? r->provider : "";
    if (p->want && !suffix_match(addr, p->want))
        return 0;
    if (p->found) {
        /* Two versions of one provider in one run are as ambiguous as two providers. */
        if (strcmp(tftap_buf_cstr(&p->address), addr) != 0 || !p->want) {
            p->many = 1;
            tftap_buf_printf(&p->why, ", %s", addr);
        }
        return 0;
    }
    p->found = 1;
    tftap_buf_puts(&p->address, addr);
    tftap_buf_puts(&p->why, addr);
    p->rc = analysis_schema_from_response(r->protocol, r->raw, r->size, &p->entry, &p->why);
    return 0;
}

/* Fill entry (a provider entry) and address from SOURCE. 0, or 2 after
 * printing why. */
static int load_source(const char *src, const char *provider, const char *db, tftap_buf *entry,
                       tftap_buf *address)
{
    struct stat st;
    int is_file = strcmp(src, "-") == 0 || (stat(src, &st) == 0 && S_ISREG(st.st_mode));
    /* A bundle is a recorded run like any other (FILE:RUN comes below). */
    if (is_file && strcmp(src, "-") != 0 && store_file_is_bundle(src) == 1)
        is_file = 0;
    if (is_file) {
        tftap_buf text = TFTAP_BUF_INIT;
        int rc = tftap_read_file(src, SCHEMA_FILE_MAX, &text);
        if (rc) {
            cli_error("reading %s: %s", src,
                      rc == TFTAP_EIO ? strerror(errno) : tftap_strerror(rc));
            tftap_buf_done(&text);
            return 2;
        }
        size_t i = 0;
        while (i < text.len && (text.data[i] == ' ' || text.data[i] == '\n' ||
                                text.data[i] == '\t' || text.data[i] == '\r'))
            i++;
        if (i < text.len && text.data[i] == '{') {
            rc = analysis_schema_entry(text.data, text.len, provider, entry, address);
            tftap_buf_done(&text);
            if (rc == TFTAP_ENOTFOUND) {
                cli_error("%s: %s", src,
                          provider ? "no such provider in the file"
                                   : "the file holds several providers (name one)");
                return 2;
            }
            if (rc) {
                cli_error("%s: not a providers schema -json document (%s)", src,
                          tftap_strerror(rc));
                return 2;
            }
            if (provider && address->len == 0)
                tftap_buf_puts(address, provider);
            return 0;
        }
        tftap_buf_done(&text);
        if (strcmp(src, "-") == 0 || access(src, X_OK) != 0) {
            cli_error("%s is neither JSON nor an executable provider", src);
            return 2;
        }
        tftap_buf raw = TFTAP_BUF_INIT, why = TFTAP_BUF_INIT;
        int protocol = 0;
        /* A provider that goes away mid-write is an error, not a signal. */
        signal(SIGPIPE, SIG_IGN);
        rc = plugin_provider_schema(src, SCHEMA_START_TIMEOUT_MS, &raw, &protocol, &why);
        if (!rc) {
            rc = analysis_schema_from_response(protocol, raw.data, raw.len, entry, &why);
            if (rc)
                cli_error("%s: its schema does not decode: %s", src, tftap_buf_cstr(&why));
        } else {
            cli_error("%s: cannot get its schema: %s", src,
                      why.len ? tftap_buf_cstr(&why) : tftap_strerror(rc));
        }
        tftap_buf_done(&raw);
        tftap_buf_done(&why);
        if (rc)
            return 2;
        if (provider) {
            tftap_buf_puts(address, provider);
        } else {
            const char *base = strrchr(src, '/');
            base = base ? base + 1 : src;
            const char *name = strncmp(base, "terraform-provider-", 19) == 0 ? base + 19 : base;
            size_t n = strcspn(name, "_");
            tftap_buf_puts(address, "registry.opentofu.org/hashicorp/");
            tftap_buf_append(address, name, n);
        }
        tftap_buf_cstr(address);
        return 0;
    }
    const char *path = NULL;
    char *owned = NULL;
    store *s = NULL;
    int64_t run = 0;
    if (cli_open_run(launch_db_path(db), src, &s, &path, &run, &owned))
        return 2;
    struct run_pick p = {.want = provider};
    int rc = store_schemas_each(s, run, each_schema, &p);
    int ret = 2;
    if (rc)
        cli_error("reading %s: %s", STORE_SHOWN(path), store_errmsg(s));
    else if (!p.found)
        cli_error("run %lld recorded no provider schema%s%s", (long long)run,
                  provider ? " of " : "", provider ? provider : "");
    else if (p.many)
        cli_error("run %lld recorded several schemas (%s): name the provider", (long long)run,
                  tftap_buf_cstr(&p.why));
    else if (p.rc)
        cli_error("run %lld: the schema of %s does not decode", (long long)run,
                  tftap_buf_cstr(&p.why));
    else {
        tftap_buf_append(entry, p.entry.data, p.entry.len);
        tftap_buf_append(address, p.address.data, p.address.len);
        tftap_buf_cstr(address);
        ret = 0;
    }
    tftap_buf_done(&p.entry);
    tftap_buf_done(&p.address);
    tftap_buf_done(&p.why);
    store_close(s);
    free(owned);
    return ret;
}

static int usage_error(const char *what)
{
    cli_error("%s (see 'tftap schema --help')", what);
    return 2;
}

int cli_schema(int argc, char **argv)
{
    static const struct option longopts[] = {{"db", required_argument, NULL, 'd'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"format", required_argument, NULL, 'f'},
                                             {"provider", required_argument, NULL, 'p'},
                                             {"breaking", no_argument, NULL, 'b'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *db = NULL, *format = "text", *provider = NULL;
    int breaking = 0;
    optind = 0; /* a full reset: main ran getopt before */
    int c;
    while ((c = cli_getopt(argc, argv, "h", longopts)) != -1) {
        switch (c) {
        case 'd':
            db = optarg;
            break;
        case 'j':
            format = "json";
            break;
        case 'f':
            format = optarg;
            break;
        case 'p':
            provider = optarg;
            break;
        case 'b':
            breaking = 1;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return 0;
        default: /* cli_getopt said what was wrong */
            return 2;
        }
    }
    enum analysis_diff_format fmt;
    if (cli_diff_format("schema", format, &fmt) != 0)
        return 2;
    int npos = argc - optind;
    char **pos = argv + optind;
    tftap_buf ea = TFTAP_BUF_INIT, eb = TFTAP_BUF_INIT, aa = TFTAP_BUF_INIT, ab = TFTAP_BUF_INIT,
              out = TFTAP_BUF_INIT;
    int rc = 2;
    if (npos >= 1 && strcmp(pos[0], "diff") == 0) {
        if (npos != 3)
            return usage_error("schema diff needs two sources, A and B");
        if (load_source(pos[1], provider, db, &ea, &aa) ||
            load_source(pos[2], provider, db, &eb, &ab))
            goto out;
        analysis_schema_diff *d = NULL;
        int err = analysis_schema_diff_new(ea.data, ea.len, eb.data, eb.len, &d);
        if (err) {
            cli_error("schema diff: %s", tftap_strerror(err));
            goto out;
        }
        int flags = fmt == ANALYSIS_DIFF_TEXT && cli_use_color() ? ANALYSIS_DIFF_COLOR : 0;
        err = analysis_schema_diff_render(d, fmt, flags, breaking, &out);
        if (err)
            cli_error("schema diff: %s", tftap_strerror(err));
        else if (cli_flush(&out) == 0)
            rc = analysis_schema_diff_count(d, breaking) ? 1 : 0;
        analysis_schema_diff_free(d);
        goto out;
    }
    if (breaking)
        return usage_error("--breaking goes with schema diff");
    if (npos < 1 || npos > 2)
        return usage_error("schema needs SOURCE (a run, a provider binary or a JSON file)");
    if (npos == 2)
        provider = pos[1];
    if (load_source(pos[0], provider, db, &ea, &aa))
        goto out;
    if (fmt == ANALYSIS_DIFF_JSON) {
        tftap_buf_puts(&out, "{\"format_version\":\"1.0\",\"provider_schemas\":{");
        tftap_buf_json_string(&out, aa.data ? aa.data : "", aa.len);
        tftap_buf_putc(&out, ':');
        tftap_buf_append(&out, ea.data, ea.len);
        tftap_buf_puts(&out, "}}\n");
    } else if (analysis_schema_render_text(ea.data, ea.len, tftap_buf_cstr(&aa), &out)) {
        cli_error("schema: %s", tftap_strerror(TFTAP_EDECODE));
        goto out;
    }
    rc = cli_flush(&out) ? 2 : 0;
out:
    tftap_buf_done(&ea);
    tftap_buf_done(&eb);
    tftap_buf_done(&aa);
    tftap_buf_done(&ab);
    tftap_buf_done(&out);
    return rc;
}
