/* tftap version (and tftap --version): what this tftap is and speaks. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_store.h"
#include "cli/git_version.h"
#include "decoder/decoder.h"
#include "store/store.h"

static const char usage_text[] =
    "usage: tftap version [--json]\n\n"
    "Print tftap's version (from its release, and the git description of the tree it\n"
    "was built from when that is known), the plugin-protocol versions whose messages it\n"
    "decodes, the SQLite library it uses and the database schema version it writes.\n"
    "A database of a newer schema is refused. 'tftap --version' is the same.\n\n"
    "  --json              one JSON object: version, git, protocols, sqlite,\n"
    "                      database_schema\n";

int cli_version_cmd(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    static const char *const protocols[] = {DEC_PROTOCOL_5, DEC_PROTOCOL_6};
    int json = 0, c;
    optind = 0;
    while ((c = cli_getopt(argc, argv, "h", longopts)) != -1) {
        switch (c) {
        case 'j':
            json = 1;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return 0;
        default:
            return 2;
        }
    }
    if (optind < argc) {
        cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind]);
        return 2;
    }
    const char *git = TFTAP_GIT_DESCRIBE;
    size_t np = sizeof protocols / sizeof protocols[0];
    tftap_buf b = TFTAP_BUF_INIT;
    if (json) {
        tftap_buf_puts(&b, "{\"version\":");
        cli_json_str(&b, PACKAGE_VERSION);
        tftap_buf_puts(&b, ",\"git\":");
        cli_json_str(&b, *git ? git : NULL);
        tftap_buf_puts(&b, ",\"protocols\":[");
        for (size_t i = 0; i < np; i++) {
            tftap_buf_puts(&b, i ? "," : "");
            cli_json_str(&b, protocols[i]);
        }
        tftap_buf_puts(&b, "],\"sqlite\":");
        cli_json_str(&b, store_sqlite_version());
        tftap_buf_printf(&b, ",\"database_schema\":%d}\n", store_schema_current());
    } else {
        tftap_buf_printf(&b, "tftap %s", PACKAGE_VERSION);
        if (*git)
            tftap_buf_printf(&b, " (git %s)", git);
        tftap_buf_puts(&b, "\nplugin protocols:");
        for (size_t i = 0; i < np; i++)
            tftap_buf_printf(&b, " %s", protocols[i]);
        tftap_buf_printf(&b, "\nsqlite: %s\ndatabase schema: %d\n", store_sqlite_version(),
                         store_schema_current());
    }
    int rc = cli_flush(&b);
    tftap_buf_done(&b);
    return rc;
}
