/* common: what a recorded OpenTofu/Terraform command line says, read
 * where a run's record is judged (analysis/check_run.c). */
#include "common/common.h"

#include <string.h>

/* Options of apply whose value may follow as the next argument ("-var
 * k=v"): that value is no plan file. */
static int takes_value(const char *opt)
{
    static const char *const with_value[] = {
        "-var",          "-var-file", "-target",    "-replace", "-exclude", "-parallelism",
        "-lock-timeout", "-state",    "-state-out", "-backup",  "-chdir",
    };
    while (*opt == '-' && opt[1] == '-')
        opt++; /* the flag package takes --name too */
    for (size_t i = 0; i < sizeof with_value / sizeof with_value[0]; i++)
        if (strcmp(opt, with_value[i]) == 0)
            return 1;
    return 0;
}

int tftap_args_apply_saved_plan(const char *args_json)
{
    int saved = 0;
    sj_doc *d = NULL;
    if (args_json && sj_parse(args_json, strlen(args_json), TFTAP_JSON_MAX_DEPTH, &d) == 0) {
        const sj_node *a = sj_root(d), *x;
        int sub = 0;
        for (x = a && a->kind == SJ_ARRAY ? a->child : NULL; x; x = x->next) {
            if (x->kind != SJ_STRING)
                continue;
            if (x->str[0] == '-') {
                if (takes_value(x->str) && x->next)
                    x = x->next; /* its value, not an operand */
                continue;
            }
            if (!sub) {
                sub = 1;
                if (strcmp(x->str, "apply") != 0)
                    break;
            } else {
                saved = 1;
                break;
            }
        }
    }
    sj_free(d);
    return saved;
}

int tftap_args_subcommand_is(const char *args_json, const char *sub)
{
    int is = 0;
    sj_doc *d = NULL;
    if (args_json && sj_parse(args_json, strlen(args_json), TFTAP_JSON_MAX_DEPTH, &d) == 0) {
        const sj_node *a = sj_root(d), *x;
        for (x = a && a->kind == SJ_ARRAY ? a->child : NULL; x; x = x->next) {
            if (x->kind != SJ_STRING)
                continue;
            if (x->str[0] == '-') {
                if (takes_value(x->str) && x->next)
                    x = x->next;
                continue;
            }
            is = strcmp(x->str, sub) == 0;
            break;
        }
    }
    sj_free(d);
    return is;
}
