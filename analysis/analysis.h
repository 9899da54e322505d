/* analysis: what recorded calls mean. Address matching (which resource
 * instance a call was about), the plan model (what a change does) and its
 * text rendering; run diff, schema diff and contract checks live here too.
 * Pure functions over decoded values and schemas, read and written through
 * the store's queries. Layer: may use common, decoder and store.
 *
 * Ownership: nothing returned here needs freeing unless a function says so;
 * output goes to caller buffers; findings lists are released with
 * analysis_findings_done. */
#ifndef TFTAP_ANALYSIS_H
#define TFTAP_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "store/store.h"

/* What the CLI said about the resources around a run: `CLI state pull`
 * (a raw state), or `CLI show -json` of a saved plan or of a state. after
 * says whether a state is the one the run started from (0) or the one it
 * left (1); a plan's changes tell before and after themselves. partial: a
 * state left by a command that failed, which may not hold what the run
 * planned or applied (1), or by one that applies nothing it plans (2: a
 * refresh; an object it kept may still be one it planned to replace). */
typedef struct analysis_match_doc {
    const char *json;
    size_t len;
    int after;
    int partial;
    /* A plan made with -target: the targets, one address a line (NULL:
     * none). Its prior state holds what was not targeted as it was before
     * the plan, not as refreshed or read by it: only the targets' objects
     * (and their instances, and what is inside a targeted module) are
     * taken from it. */
    const char *targets;
    /* 0, or the documents of one `tofu test` run block (1, 2, ...): its
     * instances are apart from those of other groups (the same address
     * with another run block's values), and a call is named only when the
     * instances it agrees with, in every group, have one address. */
    int group;
} analysis_match_doc;

/* What analysis_match_addresses found: for each call an address, or a
 * note saying why not (both NULL: neither), for the caller to store
 * (store_set_addresses); the strings are owned here. matched and
 * unmatched count the calls named and not. */
typedef struct analysis_addresses {
    store_address_set *v;
    size_t n;
    int matched, unmatched;
} analysis_addresses;
void analysis_addresses_done(analysis_addresses *a);

/* Match the run's PlanResourceChange, ApplyResourceChange, ReadResource and
 * ReadDataSource calls to resource instance addresses by resource type (and
 * mode), comparing their values with what the documents say of each
 * instance before and after the run: a call is named only after an
 * instance its values agree with (null against a value disagrees; what
 * core makes agree must agree, docs/database.md says which). Each call's
 * address, or a note saying why not, into *out (analysis_addresses_done
 * frees; nothing is written: the caller stores them); with no document,
 * missing (or a default) is the note. Calls that agree with several
 * instances whose known values are equal (count or for_each over the same
 * values) are paired with them one to one, in call order and address
 * order, per provider process and kind of call; their note then says
 * "identical to web[1], web[2]". Returns 0, TFTAP_EDECODE (a document is
 * not JSON), TFTAP_ESTORE, TFTAP_ENOMEM (*out then empty). */
int analysis_match_addresses(store *s, int64_t run_id, const analysis_match_doc *docs, size_t ndocs,
                             const char *missing, analysis_addresses *out);

/* May run_id be planned again against its own recording (a replay), and
 * the plan's names be taken for its calls? *repeatable is 1 when every two
 * of its plans and reads (PlanResourceChange, ReadResource,
 * ReadDataSource) of one type that asked the same were answered the same
 * (a replaying provider answers either with the first; different answers
 * could be swapped between instances), else 0 (replan.c). Returns 0,
 * TFTAP_ESTORE or TFTAP_ENOMEM. */
int analysis_replay_repeatable(store *s, int64_t run_id, int *repeatable);
/* The same for a replay that applies (`tofu test` run again), its
 * ApplyResourceChange calls included, whose provider processes share
 * their claims (replay.h): two calls of one process that asked the same
 * answered the same; of two processes they may differ when each provider's
 * processes ran one after the other (the replay's will, each answered what
 * its recorded twin was). */
int analysis_replay_repeatable_applies(store *s, int64_t run_id, int *repeatable);
/* Did the provider processes of run_id that keep(ctx, p) takes run one
 * after the other, each provider's (*yes 1), or did two of one provider
 * overlap in time (0)? Processes still running count as never ending.
 * Returns 0, TFTAP_ESTORE or TFTAP_ENOMEM. */
int analysis_processes_one_after_another(store *s, int64_t run_id,
                                         int (*keep)(void *ctx, const store_process_row *p),
                                         void *ctx, int *yes);

/* ---- secrets as core sees them (secrets.c) ---- */

/* The values core treats as sensitive in a run, learnt from its plan and
 * state documents (which the provider never sees marked). */
typedef struct analysis_secrets analysis_secrets;
analysis_secrets *analysis_secrets_new(void); /* NULL: out of memory */
void analysis_secrets_free(analysis_secrets *a);
/* What a document marks: `show -json` of a plan (before_sensitive,
 * after_sensitive, sensitive variables and outputs) or of a state
 * (sensitive_values, sensitive outputs), or a raw state
 * (sensitive_attributes, sensitive outputs); a tftap_config document
 * adds nothing. 0, TFTAP_EDECODE, TFTAP_ELIMIT, TFTAP_ENOMEM. */
int analysis_secrets_add_doc(analysis_secrets *a, const char *json, size_t len);
/* A sensitive variable's value: also secret inside any other string (a
 * template, upper()), which core marks but a plan not saved does not
 * say; looked for when 6 bytes or more, ignoring ASCII case. */
int analysis_secrets_add_variable(analysis_secrets *a, const char *s, size_t n);
/* What the configuration marks of a root module resource's top-level
 * attribute (resource "TYPE.NAME" or "data.TYPE.NAME", no instance key),
 * beside what documents mark (they do not say it of a new instance of a
 * plan not saved, nor of what a run newly derives from a secret):
 * ref_resource NULL when marked as it is (its expression calls
 * sensitive(), or refers to a sensitive variable, local or child module
 * output); else marked when the attribute it refers to (ref_resource's
 * ref_attr) is, by the configuration or by its provider's schema (its
 * value redacted in the run's calls). The values at marked paths become
 * secrets of the run wherever they appear. 0 or TFTAP_ENOMEM. */
int analysis_secrets_add_config(analysis_secrets *a, const char *resource, const char *attr,
                                const char *ref_resource, const char *ref_attr);
size_t analysis_secrets_count(const analysis_secrets *a); /* distinct secret strings */

typedef struct analysis_redaction {
    int64_t core_mark;    /* values at paths core marked */
    int64_t known_secret; /* strings equal to a secret, elsewhere */
    int64_t arguments;    /* secrets cut out of the command's arguments */
    int64_t calls;        /* calls rewritten */
    int values_kept;      /* the run keeps values in clear: only the hashes were stored */
} analysis_redaction;
/* Redact run_id's stored values by what a holds (after the addresses are
 * matched: the marks name instances): the values at marked paths of the
 * named calls, every string equal to a secret in any call, the secrets in
 * the command's arguments; and keep the secrets' hashes (run_secrets) and
 * the counts (runs.redactions). A run recorded with values kept
 * (--record-sensitive) keeps them: only the hashes are stored. Nothing to
 * do when a holds nothing. 0, a store error, TFTAP_ENOMEM. */
int analysis_redact_run(store *s, int64_t run_id, const analysis_secrets *a,
                        analysis_redaction *out);

/* Addresses in the CLI's order (plan output sorts by address): bytewise,
 * except that runs of digits compare as numbers (web[2] before web[10]). */
int analysis_address_cmp(const char *a, const char *b);

/* ---- the plan model and its rendering -----------------------------------------------------------
 */

enum analysis_action {
    ANALYSIS_ACTION_NOOP,    /* nothing changes (or nothing to compare) */
    ANALYSIS_ACTION_CREATE,  /* prior null */
    ANALYSIS_ACTION_DELETE,  /* after null */
    ANALYSIS_ACTION_UPDATE,  /* in place */
    ANALYSIS_ACTION_REPLACE, /* requires_replace non-empty */
    ANALYSIS_ACTION_READ,    /* a data source read (ReadDataSource) */
};
/* What a change does, comparing prior with planned (PlanResourceChange) or
 * new state (ApplyResourceChange, ReadResource). Returns 0 or TFTAP_EDECODE. */
int analysis_change_action(const store_change_row *c, enum analysis_action *out);
/* "no-op", "create", "delete", "update", "replace", "read". */
const char *analysis_action_name(enum analysis_action a);

enum analysis_render_flags {
    ANALYSIS_RENDER_COLOR = 1, /* ANSI colours on the markers */
    /* The call was never answered because the record lost its answer (a
     * gap): what it asked for, said as such, never as failed or done. */
    ANALYSIS_RENDER_UNRECORDED = 2,
};

/* Append a change the way a plan reads it: header comment, "+ resource ..."
 * with +, -, ~, -/+ markers, "(known after apply)" with refinements,
 * "# forces replacement" and "(sensitive value)". Returns 0 or
 * TFTAP_EDECODE (malformed JSON in the row) or TFTAP_ENOMEM. */
int analysis_render_change(const store_change_row *c, int flags, tftap_buf *out);

/* ---- contract checks (docs/check.md) ------------------------------------ */

enum analysis_verdict {
    ANALYSIS_REJECTS,   /* core stops with an error */
    ANALYSIS_TOLERATES, /* core only logs a warning (legacy type system) */
    ANALYSIS_DRIFT,     /* informational: a refresh found the object changed */
};

/* One broken rule. Every string is owned by the findings list; expected and
 * actual are decoded-value JSON (redacted values stay redacted) or NULL. */
typedef struct analysis_finding {
    int64_t call_id;
    int64_t other_call_id; /* the call compared with (the first plan), else 0 */
    char *rpc;
    char *type_name;
    char *address; /* NULL when the call was not matched to one */
    const char *rule;
    char *path; /* ".tags[\"x\"][2]"; "" for the whole object */
    char *expected;
    char *actual;
    enum analysis_verdict verdict;
    char *message; /* one line, for the provider's developer */
} analysis_finding;

typedef struct analysis_findings {
    analysis_finding *v;
    size_t n, cap;
    size_t unchecked; /* calls whose values could not be checked (no schema, bad JSON) */
    int running;      /* the run has no end in the record yet: more calls may come */
} analysis_findings;
#define ANALYSIS_FINDINGS_INIT                                                                     \
    {                                                                                              \
        NULL, 0, 0, 0, 0                                                                           \
    }
void analysis_findings_done(analysis_findings *f);
/* Findings that are violations (not drift). */
size_t analysis_findings_violations(const analysis_findings *f);
/* Findings of one verdict (the summary's rejected, tolerated, drift). */
size_t analysis_findings_count(const analysis_findings *f, enum analysis_verdict v);
/* "rejects", "tolerates", "drift". */
const char *analysis_verdict_name(enum analysis_verdict v);

/* One recorded call's values as the store keeps them (JSON texts, NULL when
 * absent; see store_change_row). */
typedef struct analysis_call {
    int64_t call_id;
    const char *rpc; /* PlanResourceChange, ApplyResourceChange, ReadResource, ReadDataSource */
    const char *type_name;
    const char *address;
    const char *block_schema;         /* the type's schema block; NULL: values not checkable */
    const sj_node *block_schema_node; /* the same, parsed already (many calls share one), or NULL */
    const char *prior, *config, *planned, *new_state, *requires_replace;
    const char *identity; /* the response's new_identity.identity_data, or NULL */
    int legacy;           /* the response set legacy_type_system */
    int has_error;        /* the response carried an error diagnostic */
} analysis_call;

/* Check one call's answer against the rules core applies to it; findings
 * are appended to out. Returns 0, TFTAP_EDECODE (a JSON text or the schema
 * is malformed: nothing appended, out->unchecked counted) or TFTAP_ENOMEM. */
int analysis_check_call(const analysis_call *c, analysis_findings *out);

/* "Inconsistent final plan": the plan made during apply (final, its
 * planned state) against the first plan of the same address (first).
 * Findings are reported on final's call. Returns as analysis_check_call. */
int analysis_check_final_plan(const analysis_call *first, const analysis_call *final,
                              analysis_findings *out);

/* Every check over a run's recorded calls, optionally only those whose
 * address or type equals filter (as store_changes_each); the final plan of
 * an apply is compared with the first plan of the same address in the same
 * run or, for a saved plan, in the latest earlier run that planned it.
 * Returns 0, TFTAP_ESTORE or TFTAP_ENOMEM. */
int analysis_check_run(store *s, int64_t run_id, const char *filter, analysis_findings *out);

/* analysis_check_run(s, run_id, NULL, out) in two steps, for a caller that
 * matches the run's addresses meanwhile (tftap run): analysis_check_read
 * reads the run's changes but their addresses, on a connection of its own
 * (another thread may write the addresses through another); then
 * analysis_check_judge reads the addresses through s and judges, with the
 * findings analysis_check_run would give then. A run with an apply is read
 * again whole (the store pairs its replacements by address). Both return
 * 0, TFTAP_ESTORE or TFTAP_ENOMEM. */
typedef struct analysis_check_pass analysis_check_pass;
int analysis_check_read(store *s, int64_t run_id, analysis_check_pass **out);
int analysis_check_judge(store *s, analysis_check_pass *c, analysis_findings *out);
void analysis_check_pass_free(analysis_check_pass *c);

/* Append the findings of run as one JSON object (`tftap check --json`,
 * docs/check.md): {"run":..,"findings":[..],"violations":..,"rejected":..,
 * "tolerated":..,"drift":..,"unchecked":..}, and "running":true when the run has
 * no end yet. max_bytes (0: no cap) stops
 * listing findings once they pass that many bytes; the counts stay whole and
 * "truncated" says how many were left out. Returns 0 or TFTAP_ENOMEM. */
int analysis_findings_json(const analysis_findings *f, int64_t run, size_t max_bytes,
                           tftap_buf *out);

/* ---- a run's verdict: how it ended and every reason tftap knows it failed ---- */

/* What tftap knows of how a run ended: its exit code, its failed calls
 * (v_calls.failed), the answers core rejects (tftap check's findings) and
 * the records lost to gaps (runs.dropped). The one rule every output that
 * judges a run uses (the CLI's show, calls, runs, bundle; the web API). */
typedef struct analysis_run_verdict {
    int known;   /* the run's row was read */
    int running; /* not ended yet */
    int has_exit, exit_code;
    int64_t failed_calls;
    int64_t lost;
    analysis_findings findings; /* every finding of the check */
    size_t rejected, tolerated; /* findings core rejects, tolerates */
    /* The command exited 0 (or 2 for plan -detailed-exitcode), so core
     * rejected nothing: findings that say it would are the check's own
     * mistake (say, a call named by the wrong address) and are no reason;
     * they are counted here and rejected is 0. */
    size_t unconfirmed;
    int failed;
    int checked; /* the check ran: findings, rejected, tolerated, unconfirmed hold */
    /* Providers with gaps in the run, and the first gap's reason: a call of
     * theirs never answered was lost to the gap, not failed. */
    char **gap_providers;
    size_t ngap_providers;
    char *gap_reason;
    int64_t unrecorded;      /* calls never answered for that reason */
    int64_t *unrecorded_ids; /* theirs, ascending */
    /* The first ANALYSIS_VERDICT_FAILED_IDS failed calls (not those lost
     * to a gap), ascending: what a page links to. */
    int64_t *failed_ids;
    size_t nfailed_ids;
} analysis_run_verdict;
#define ANALYSIS_VERDICT_FAILED_IDS 100

/* Read run's verdict, the check included unless flags has
 * ANALYSIS_VERDICT_LAZY and the command succeeded (its findings could not
 * make the run failed: a list of many runs needs no check of each clean
 * one). Returns 0, TFTAP_ENOTFOUND (no such run), or a store or analysis
 * error; analysis_run_verdict_done is due either way. */
enum { ANALYSIS_VERDICT_LAZY = 1 };
int analysis_run_verdict_read(store *s, int64_t run, int flags, analysis_run_verdict *v);
void analysis_run_verdict_done(analysis_run_verdict *v);
/* 1 when row was never answered and its provider lost records to a gap
 * in the run: "not recorded", not failed (v_calls.not_recorded). */
int analysis_run_verdict_unrecorded(const analysis_run_verdict *v, const store_call_row *row);
/* The same by call id (for rows that are no store_call_row). */
int analysis_run_verdict_unrecorded_id(const analysis_run_verdict *v, int64_t call_id);
/* The (first) finding by which core rejects call_id's answer, or NULL
 * (none, or the run succeeded: see unconfirmed). */
const analysis_finding *analysis_run_verdict_reject_of(const analysis_run_verdict *v,
                                                       int64_t call_id);
/* Append the verdict as JSON: {"failed", "running", "checked", "exit_code",
 * "failed_calls", "records_lost", "not_recorded", "tolerated", "unconfirmed",
 * "rejected": [{call_id, method, address, type_name, rule, path, expected,
 * actual, message}]} (expected and actual as decoded-value JSON, exact).
 * max_bytes (0: no cap) stops listing rejected answers once the list passes
 * that many bytes; "rejected_count" then says how many there are. */
void analysis_run_verdict_json(const analysis_run_verdict *v, size_t max_bytes, tftap_buf *b);

/* ---- run diff: what a provider did differently between two runs ----------- */

/* One recorded call as the diff reads it (a store_call_row's fields). */
typedef struct analysis_diff_call {
    int64_t call_id;
    const char *provider;  /* provider address, or NULL */
    const char *rpc;       /* "PlanResourceChange", ... */
    const char *type_name; /* or NULL */
    const char *address;   /* matched instance address, or NULL */
    int has_status, status_code;
    const char *request_json; /* the rendered messages (docs/messages.md), or NULL */
    const char *response_json;
    int64_t schema_version; /* of type_name's schema, -1 when unknown */
    /* A call given without its JSON (request_json and response_json NULL,
     * summarized 1): what pairing needs of it, read by
     * analysis_diff_call_summarize while the JSON was at hand. */
    int summarized;
    const char *action; /* "create", "update", ... (static), or NULL */
    int prior_null;
    /* A call without an address: its request's digest (the first 64 bits
     * of the SHA-256 of its JSON with members sorted), to pair it with an
     * equal request of the other run before any by order. */
    uint64_t request_digest;
} analysis_diff_call;

/* Read what pairing needs (the planned or applied action, whether the
 * prior state is null, an unnamed call's request digest) from c's JSON
 * into c and set c->summarized: the
 * caller may then drop the JSON (and set both pointers NULL). Returns 0 or
 * TFTAP_EDECODE (malformed JSON), TFTAP_ENOMEM. */
int analysis_diff_call_summarize(analysis_diff_call *c);

/* Hands summarized calls' JSON over again: calls fn(fctx, call_id,
 * request_json, response_json) for each call of the run (either JSON may
 * be NULL), stopping at fn's non-zero return, which it returns; else 0 or
 * a tftap error. */
typedef int (*analysis_diff_json_fn)(void *fctx, int64_t call_id, const char *request_json,
                                     const char *response_json);
typedef int (*analysis_diff_stream)(void *ctx, analysis_diff_json_fn fn, void *fctx);

typedef struct analysis_diff analysis_diff;

typedef struct analysis_diff_opts {
    const char *filter;        /* keep calls of this address (and its instances) or type */
    const char *const *ignore; /* glob patterns on attribute paths (".id", ".tags*") */
    size_t nignore;
} analysis_diff_opts;

/* Pair the calls of run A with those of run B (by provider, method, type,
 * address, then order among equals) and compare what the provider did:
 * per attribute of each planned, new, read or upgraded value, where it came
 * from (config, prior state, left unknown, chosen by the provider) and the
 * chosen values; planned action, requires_replace, diagnostics, private
 * data (by hash), deferrals, status and schema version. Differences of the
 * inputs (config, prior state) are kept apart from those of behaviour.
 * The calls are borrowed until analysis_diff_free. Returns 0,
 * TFTAP_EDECODE (a call's JSON is malformed), TFTAP_ENOMEM. */
int analysis_diff_calls(const analysis_diff_call *a, size_t na, const analysis_diff_call *b,
                        size_t nb, const analysis_diff_opts *opts, analysis_diff **out);
/* The same with run A's calls summarized, without their JSON, which
 * stream(stream_ctx, ...) hands over once more while the pairs are
 * compared (each parsed, compared and freed as it comes): the JSON of run A
 * is never held whole, only B's (whose calls carry their JSON). Returns as
 * above, stream's error, TFTAP_ENOTFOUND (a call of A the stream did not
 * give again) or TFTAP_EINVAL (a call of B summarized). */
int analysis_diff_calls_streamed(const analysis_diff_call *a, size_t na,
                                 analysis_diff_stream stream, void *stream_ctx,
                                 const analysis_diff_call *b, size_t nb,
                                 const analysis_diff_opts *opts, analysis_diff **out);

/* analysis_diff_calls over two recorded runs, run_a of sa and run_b of sb
 * (the same store, or two: a database and a bundle). Returns as above, or
 * TFTAP_ESTORE. */
int analysis_diff_runs(store *sa, int64_t run_a, store *sb, int64_t run_b,
                       const analysis_diff_opts *opts, analysis_diff **out);

/* How many behaviour differences were found (0: the provider behaved the
 * same). */
size_t analysis_diff_count(const analysis_diff *d);

enum analysis_diff_format {
    ANALYSIS_DIFF_TEXT,     /* reads like a plan diff */
    ANALYSIS_DIFF_JSON,     /* one object: {"same":..,"differences":[..],"inputs":[..]} */
    ANALYSIS_DIFF_MARKDOWN, /* collapsed <details> per address, for a pull request */
};
enum analysis_diff_flags {
    ANALYSIS_DIFF_COLOR = 1,     /* ANSI colours (text only) */
    ANALYSIS_DIFF_NO_INPUTS = 2, /* list no input difference (they are still counted) */
    /* The runs' secret values were hashed with different keys (store_run_key_id):
     * JSON says "secrets_comparable": false. */
    ANALYSIS_DIFF_SECRETS_APART = 4,
};

/* Append the report. max_bytes caps the markdown (0: no cap); what does not
 * fit is counted at the end. Returns 0 or TFTAP_ENOMEM. */
int analysis_diff_render(const analysis_diff *d, enum analysis_diff_format fmt, int flags,
                         size_t max_bytes, tftap_buf *out);

void analysis_diff_free(analysis_diff *d);

/* ---- suite diff: two recorded acceptance test suites, step by step ---------- */

typedef struct analysis_suite_diff analysis_suite_diff;

/* The CLI subcommand in a run's args (a JSON array of strings): its first
 * word that is not an option; "" when none. Heap (free()), NULL: no memory. */
char *analysis_args_subcommand(const char *args_json);

/* Pair the step runs of suite_a (in sa) with those of suite_b (in sb) by
 * test, step, CLI subcommand and order among equals, and diff each pair as
 * analysis_diff_runs does (opts as there). Step runs in one suite only, tests
 * in one only, and steps that failed (an error exit: not plan's 2) in one
 * only are counted too. Returns 0, TFTAP_ESTORE, TFTAP_EDECODE,
 * TFTAP_ENOMEM. */
int analysis_suite_diff_runs(store *sa, int64_t suite_a, store *sb, int64_t suite_b,
                             const analysis_diff_opts *opts, analysis_suite_diff **out);
/* Behaviour differences in paired step runs, plus step runs in one suite
 * only, plus steps failed in one only: 0 when the suites agree. */
size_t analysis_suite_diff_count(const analysis_suite_diff *d);
/* Text: per test, its differing step runs with their run diffs; markdown: a
 * summary table, then one collapsed section per test that differs (at most
 * max_bytes, 0: no cap); JSON: {"same","pairs":[{"a","b","differences","diff"}],
 * "only_a","only_b","tests_in_one_only","steps_failed_in_one_only"}. flags
 * as analysis_diff_render. 0 or TFTAP_ENOMEM. */
int analysis_suite_diff_render(const analysis_suite_diff *d, enum analysis_diff_format fmt,
                               int flags, size_t max_bytes, tftap_buf *out);
void analysis_suite_diff_free(analysis_suite_diff *d);

/* ---- provider schemas -------------------------------------------------------- */

/* Append a serialized GetProviderSchema response (protocol 5's GetSchema
 * or 6's) as the provider's entry of `tofu providers schema -json`
 * ({"provider":..,"resource_schemas":..,...}). On a decode failure the
 * decoder's message is appended to errmsg (may be NULL). Returns 0,
 * TFTAP_EDECODE, TFTAP_ELIMIT, TFTAP_ENOMEM. */
int analysis_schema_from_response(int protocol, const void *raw, size_t n, tftap_buf *out,
                                  tftap_buf *errmsg);

/* Append the entry of provider (an address or a suffix of one after a '/';
 * NULL: the only one) from a `providers schema -json` document (or an
 * entry on its own); its address (the document's key) to address (may be
 * NULL; nothing for an entry on its own). Returns 0, TFTAP_ENOTFOUND, TFTAP_EDECODE,
 * TFTAP_ENOMEM. */
int analysis_schema_entry(const char *json, size_t len, const char *provider, tftap_buf *out,
                          tftap_buf *address);
/* A provider entry as text: each type with its attributes and modes. */
int analysis_schema_render_text(const char *entry, size_t len, const char *address, tftap_buf *out);

typedef struct analysis_schema_diff analysis_schema_diff;

/* Compare two provider entries (or single-provider documents): types,
 * data sources, ephemeral resources and functions added and removed;
 * attributes added and removed, type changes, required/optional/computed
 * changes, sensitive and write-only flips, deprecations, nesting modes and
 * min/max items, each classified as breaking or not. Returns 0,
 * TFTAP_EDECODE, TFTAP_ELIMIT, TFTAP_ENOMEM. */
int analysis_schema_diff_new(const char *a, size_t alen, const char *b, size_t blen,
                             analysis_schema_diff **out);
void analysis_schema_diff_free(analysis_schema_diff *d);
/* Changes found (only the breaking ones when breaking_only). */
size_t analysis_schema_diff_count(const analysis_schema_diff *d, int breaking_only);
int analysis_schema_diff_render(const analysis_schema_diff *d, enum analysis_diff_format fmt,
                                int flags, int breaking_only, tftap_buf *out);

/* ---- attribute paths and value differences ----------------------------------- */

/* Append one step to an attribute path: ".name" for an identifier, else
 * "[\"key\"]" (the paths diff, check and replay report). */
void analysis_path_member(tftap_buf *path, const char *key, size_t len);

/* Whether path matches one of n --ignore patterns (fnmatch globs on
 * attribute paths; a pattern without a leading '.' also matches the path
 * without its first dot: "id" is ".id"). patterns may be NULL when n is 0. */
int analysis_path_ignored(const char *const *patterns, size_t n, const char *path);

enum analysis_value_diff_flags {
    /* Any two {"$sensitive": ...} markers are equal, whatever their hash
     * (values redacted with different keys). */
    ANALYSIS_VDIFF_SENSITIVE_EQUAL = 1,
    /* A value redacted on side a ({"$sensitive": ...}, or an unknown whose
     * refinements were taken away: {"$unknown": {}}) equals side b's value
     * there (known, or unknown): what core marked is redacted after the
     * run, so a recording has it redacted where a live request has it in
     * clear (replay). */
    ANALYSIS_VDIFF_REDACTED_MATCHES = 2,
};

typedef struct analysis_value_diff_opts {
    const char *const *ignore; /* --ignore patterns (analysis_path_ignored) */
    size_t nignore;
    int flags;
    /* With ANALYSIS_VDIFF_REDACTED_MATCHES: NULL (a redacted value equals
     * any value), or 1 when value, in clear, is the one redacted (its hash
     * under the recording's key). */
    int (*redacted_equal)(void *ctx, const sj_node *redacted, const sj_node *value);
    void *redacted_ctx;
} analysis_value_diff_opts;

/* The member of object obj paired with x, a member of another object whose
 * first member is x_first: the same key, and the same occurrence of it (the
 * second "a" of one pairs with the second "a" of the other: a document from
 * someone else may repeat a key, and must still equal itself). NULL when
 * obj is no object or has fewer. */
const sj_node *analysis_member_pair(const sj_node *obj, const sj_node *x_first, const sj_node *x);

/* Walk two decoded values (JSON trees) side by side and call fn once per
 * differing leaf path, with both values (NULL: absent on that side).
 * Objects are compared member by member (analysis_member_pair), arrays
 * element by element (the
 * elements past the shorter one are absent on its side), everything else
 * (and unknowns, with their refinements) with sj_equal. Paths start with
 * prefix (may be NULL); a path is ignored when a pattern matches it or its
 * part after prefix (with prefix ".config", the pattern ".name" ignores
 * ".config.name", and so does ".config.*"). A non-zero return from fn stops the walk and is
 * returned. Returns 0, fn's value, TFTAP_ELIMIT (nested deeper than
 * TFTAP_JSON_MAX_DEPTH) or TFTAP_ENOMEM. */
int analysis_value_diff(const sj_node *a, const sj_node *b, const char *prefix,
                        const analysis_value_diff_opts *o,
                        int (*fn)(void *ctx, const char *path, const sj_node *a, const sj_node *b),
                        void *ctx);

/* Is member (of a request message) one of its provider-private fields
 * ("private", "prior_private", ...): bytes a replay sends back as others,
 * recorded as a size and a hash? */
int analysis_private_member(const sj_node *member);

/* Two requests "asked the same" when their digests are equal: SHA-256 (hex)
 * of a canonical text, members in key order, every secret marker one
 * token whatever its hash (runs keyed differently ask alike), the
 * request's provider-private fields left out unless private_too. What
 * replay matches a call with (as the comparison without --ignore patterns
 * would), and what the run diff pairs unnamed calls by first. 1 with hex
 * set, 0 when there is none (nested deeper than TFTAP_JSON_MAX_DEPTH), or
 * TFTAP_ENOMEM. */
int analysis_request_digest(const sj_node *request, int private_too, char hex[65]);

/* ---- mocks for `tofu test` (docs/replay.md) -------------------------------- */

/* One recorded value of a resource or data source instance. Strings are
 * copied by analysis_mocks_add. */
typedef struct analysis_mock_value {
    const char *provider; /* provider address, or NULL when unknown */
    int data;             /* a data source (ReadDataSource) */
    const char *type_name;
    const char *address; /* matched instance address, or NULL */
    const char *rpc;     /* the call the value came from */
    int64_t call_id;
    const char *block_schema; /* the type's schema block (store_change_row) */
    const char *value;        /* applied new state, read state or planned state (JSON) */
    const char *config;       /* the call's configuration (JSON), or NULL */
    /* 0: the defaults may come from this value (the ADDRESS|TYPE filter
     * keeps it); 1: only its configuration counts (see below). */
    int config_only;
} analysis_mock_value;

typedef struct analysis_mocks analysis_mocks;
int analysis_mocks_new(analysis_mocks **out); /* 0 or TFTAP_ENOMEM */
void analysis_mocks_free(analysis_mocks *m);
/* Add one recorded value. A value that is not an object (a destroy's null
 * state) counts only for its configuration. 0 or TFTAP_ENOMEM. */
int analysis_mocks_add(analysis_mocks *m, const analysis_mock_value *v);

/* Append one `mock_provider "NAME"` block per provider (NAME: the last part
 * of its address) with a `mock_resource "TYPE"` or `mock_data "TYPE"` block
 * per type whose `defaults` are the recorded values `tofu test` accepts
 * there: computed attributes that no recorded configuration of the type
 * sets (OpenTofu refuses defaults for the others), nested blocks as an
 * object applied to each of their blocks, only where every configuration
 * has that block; never a sensitive value, an unknown or write-only one
 * (comments say what was left out and why). The value of each type comes
 * from an applied state before a read state before a planned one, then
 * from the address first in byte order (no address last), then the latest
 * call; a comment names it. run (0: none) is named in the header comment.
 * *ntypes (may be NULL) counts the mock blocks written. Returns 0,
 * TFTAP_EDECODE (a value or schema is malformed JSON), TFTAP_ENOMEM. */
int analysis_mocks_render(analysis_mocks *m, int64_t run, tftap_buf *out, size_t *ntypes);

#endif
