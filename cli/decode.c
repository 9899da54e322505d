/* tftap decode: decode one DynamicValue payload (msgpack or JSON) to the
 * decoded-value JSON, against a type or a provider schema. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <openssl/rand.h>

#include "cli/cli.h"
#include "decoder/decoder.h"

static const char decode_usage[] =
    "usage: tftap decode --type TYPE_JSON [options] [FILE|-]\n"
    "       tftap decode --schema FILE (--resource|--data-source|--ephemeral|--provider) NAME\n"
    "                    [options] [FILE|-]\n"
    "\n"
    "Decode one DynamicValue payload (go-cty msgpack, or JSON) and print it as JSON.\n"
    "The schema file is the output of `tofu providers schema -json`, so the blobs that\n"
    "terraform-plugin-go writes under TF_LOG_SDK_PROTO_DATA_DIR can be read.\n"
    "\n"
    "options:\n"
    "  --type TYPE_JSON      cty type JSON, e.g. '[\"object\",{\"id\":\"string\"}]'\n"
    "  --schema FILE         provider schemas JSON (tofu providers schema -json)\n"
    "  --provider-address A  which provider in the schema file (default: the only one)\n"
    "  --resource NAME       decode against a managed resource type's schema\n"
    "  --data-source NAME    ... a data source's schema\n"
    "  --ephemeral NAME      ... an ephemeral resource's schema\n"
    "  --provider            ... the provider configuration schema\n"
    "  --input msgpack|json  msgpack (default) or json; a FILE ending in .json means json\n"
    "  --max-depth N         nesting limit (default 256; at most what the stack holds,\n"
    "                        about 15,000 levels with an 8 MiB stack)\n"
    "  --show-sensitive      print sensitive and write-only values instead of their hash\n"
    "  --json                compact single-line JSON (default: indented)\n"
    "  -h, --help            this help\n";

/* The deepest nesting this process's stack holds: the decoder recurses
 * once per level, about 220 bytes a level as measured (8 MiB held 35,000
 * levels, not 40,000), so 512 bytes a level and 256 KiB for the rest. */
static unsigned long stack_depth_cap(void)
{
    struct rlimit rl;
    unsigned long long stack = 8ull << 20;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        stack = rl.rlim_cur;
    unsigned long long margin = 256ull << 10;
    unsigned long long cap = stack > 2 * margin ? (stack - margin) / 512 : 64;
    return cap > 100000 ? 100000 : (unsigned long)cap;
}

/* Redaction for one invocation: a random key, so equal secrets in one
 * output compare equal without the output revealing them. */
static void redact_random_key(void *ctx, const char *json, size_t len, char out[65])
{
    tftap_hmac_sha256_hex(ctx, 32, json, len, out);
}

int cli_decode(int argc, char **argv)
{
    enum {
        OPT_TYPE = 256,
        OPT_SCHEMA,
        OPT_PADDR,
        OPT_RES,
        OPT_DS,
        OPT_EPH,
        OPT_PROV,
        OPT_INPUT,
        OPT_DEPTH,
        OPT_SHOW,
        OPT_JSON
    };
    static const struct option longopts[] = {
        {"type", required_argument, NULL, OPT_TYPE},
        {"schema", required_argument, NULL, OPT_SCHEMA},
        {"provider-address", required_argument, NULL, OPT_PADDR},
        {"resource", required_argument, NULL, OPT_RES},
        {"data-source", required_argument, NULL, OPT_DS},
        {"ephemeral", required_argument, NULL, OPT_EPH},
        {"provider", no_argument, NULL, OPT_PROV},
        {"input", required_argument, NULL, OPT_INPUT},
        {"max-depth", required_argument, NULL, OPT_DEPTH},
        {"show-sensitive", no_argument, NULL, OPT_SHOW},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *type_json = NULL, *schema_path = NULL, *provider_addr = NULL, *name = NULL;
    const char *input = NULL;
    int kind = -1, show_sensitive = 0, compact = 0, picked = 0;
    unsigned long max_depth = 0;
    int c;
    optind = 0;
    while ((c = cli_getopt(argc, argv, "h", longopts)) != -1) {
        switch (c) {
        case OPT_TYPE:
            type_json = optarg;
            break;
        case OPT_SCHEMA:
            schema_path = optarg;
            break;
        case OPT_PADDR:
            provider_addr = optarg;
            break;
        case OPT_RES:
            kind = DEC_SCHEMA_RESOURCE;
            name = optarg;
            picked++;
            break;
        case OPT_DS:
            kind = DEC_SCHEMA_DATA_SOURCE;
            name = optarg;
            picked++;
            break;
        case OPT_EPH:
            kind = DEC_SCHEMA_EPHEMERAL;
            name = optarg;
            picked++;
            break;
        case OPT_PROV:
            kind = DEC_SCHEMA_PROVIDER;
            name = "";
            picked++;
            break;
        case OPT_INPUT:
            if (strcmp(optarg, "msgpack") != 0 && strcmp(optarg, "json") != 0) {
                cli_usage_error("decode", "--input must be msgpack or json");
                return 2;
            }
            input = optarg;
            break;
        case OPT_DEPTH: {
            char *end;
            unsigned long cap = stack_depth_cap();
            errno = 0;
            max_depth = strtoul(optarg, &end, 10);
            if (errno || !*optarg || *end || optarg[0] == '-' || max_depth == 0 ||
                max_depth > cap) {
                cli_usage_error("decode",
                                "--max-depth must be a number from 1 to %lu (what the stack holds: "
                                "ulimit -s raises it)",
                                cap);
                return 2;
            }
            break;
        }
        case OPT_SHOW:
            show_sensitive = 1;
            break;
        case OPT_JSON:
            compact = 1;
            break;
        case 'h':
            fputs(decode_usage, stdout);
            return 0;
        default:
            return 2;
        }
    }
    const char *problem = NULL;
    if (!type_json == !schema_path)
        problem = "give --type or --schema (one of them)";
    else if (schema_path && picked != 1)
        problem = "--schema needs one of --resource, --data-source, --ephemeral, --provider";
    else if (type_json && picked)
        problem = "--resource, --data-source, --ephemeral and --provider go with --schema";
    else if (argc - optind > 1)
        problem = "at most one FILE";
    if (problem) {
        cli_usage_error("decode", "%s", problem);
        return 2;
    }
    const char *path = optind < argc ? argv[optind] : "-";
    if (!input)
        input = tftap_ends_with(path, ".json") ? "json" : "msgpack";

    int status = 1;
    dec_limits lim = {(unsigned)max_depth, 0};
    dec_error err = DEC_ERROR_INIT;
    dec_type *own_type = NULL;
    dec_schema *schema = NULL;
    const dec_type *type = NULL;
    tftap_buf data = TFTAP_BUF_INIT, out = TFTAP_BUF_INIT, pretty = TFTAP_BUF_INIT;
    tftap_buf msg = TFTAP_BUF_INIT;
    unsigned char key[32];

    if (type_json) {
        if (dec_type_parse(type_json, strlen(type_json), &lim, &own_type, &err)) {
            dec_error_format(&err, &msg);
            cli_error("--type: %s", tftap_buf_cstr(&msg));
            goto done;
        }
        type = own_type;
    } else {
        tftap_buf sj = TFTAP_BUF_INIT;
        int rc = tftap_read_file(schema_path, DEC_DEFAULT_MAX_BYTES, &sj);
        if (rc) {
            cli_error("cannot read %s: %s", schema_path,
                      rc == TFTAP_EIO ? strerror(errno) : tftap_strerror(rc));
            tftap_buf_done(&sj);
            goto done;
        }
        rc = dec_schema_from_cli_json(sj.data, sj.len, provider_addr, &lim, &schema, &err);
        tftap_buf_done(&sj);
        if (rc) {
            if (err.path && err.path[0])
                dec_error_format(&err, &msg);
            else
                tftap_buf_puts(&msg, err.reason ? err.reason : tftap_strerror(rc));
            cli_error("%s: %s", schema_path, tftap_buf_cstr(&msg));
            goto done;
        }
        type = dec_schema_lookup(schema, kind, name);
        if (!type) {
            cli_error("%s: no schema for %s", schema_path, *name ? name : "the provider");
            goto done;
        }
    }

    int rc = tftap_read_file(path, DEC_DEFAULT_MAX_BYTES, &data);
    if (rc) {
        cli_error("cannot read %s: %s", strcmp(path, "-") ? path : "standard input",
                  rc == TFTAP_EIO ? strerror(errno) : tftap_strerror(rc));
        goto done;
    }
    dec_opts opts = {.limits = lim};
    if (!show_sensitive) {
        if (RAND_bytes(key, sizeof key) != 1) {
            cli_error("cannot make a redaction key");
            goto done;
        }
        opts.redact = redact_random_key;
        opts.redact_ctx = key;
    }
    if (strcmp(input, "json") == 0)
        rc = dec_json_to_json(type, data.data, data.len, &opts, &out, &err);
    else
        rc = dec_msgpack_to_json(type, data.data, data.len, &opts, &out, &err);
    if (rc) {
        dec_error_format(&err, &msg);
        cli_error("%s", tftap_buf_cstr(&msg));
        goto done;
    }
    if (compact) {
        fwrite(out.data, 1, out.len, stdout);
    } else {
        tftap_json_pretty(out.data, out.len, &pretty);
        fwrite(pretty.data, 1, pretty.len, stdout);
    }
    fputc('\n', stdout);
    status = fflush(stdout) == 0 ? 0 : 1;
done:
    tftap_buf_done(&data);
    tftap_buf_done(&out);
    tftap_buf_done(&pretty);
    tftap_buf_done(&msg);
    dec_error_done(&err);
    dec_type_free(own_type);
    dec_schema_free(schema);
    return status;
}
