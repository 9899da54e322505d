/* cli: a run's verdict (verdict.c). Private to cli/. */
#ifndef TFTAP_CLI_VERDICT_H
#define TFTAP_CLI_VERDICT_H

#include <stdint.h>

#include "analysis/analysis.h"
#include "common/common.h"
#include "store/store.h"

/* A run's verdict (analysis_run_verdict_read says what each field holds). */
typedef analysis_run_verdict cli_verdict;

/* Read run's verdict, the check included unless flags has
 * CLI_VERDICT_LAZY and the command succeeded (its findings could not make
 * the run failed: a list of many runs needs no check of each clean one).
 * Returns 0, or a store or analysis error; cli_verdict_done is due either
 * way. */
enum { CLI_VERDICT_LAZY = 1 };
int cli_verdict_read(store *s, int64_t run, int flags, cli_verdict *v);
void cli_verdict_done(cli_verdict *v);
/* 1 when the run failed as the command did: a non-zero exit code (2 of
 * plan -detailed-exitcode aside); without an exit code, a failed call or
 * an answer core rejects. */
int cli_verdict_failed(const cli_verdict *v);
/* 1 when row was never answered and its provider lost records to a gap
 * in the run: "not recorded", not failed. */
int cli_verdict_unrecorded(const cli_verdict *v, const store_call_row *row);
/* The same by call id (for rows that are no store_call_row). */
int cli_verdict_unrecorded_id(const cli_verdict *v, int64_t call_id);
/* The (first) finding by which core rejects call_id's answer, or NULL
 * (none, or the run succeeded: see unconfirmed). */
const analysis_finding *cli_verdict_reject_of(const cli_verdict *v, int64_t call_id);
/* "Run N failed: the command exited 1; 1 answer core rejects; ...\n", or
 * that it succeeded, is running, or has no exit code; tolerated legacy
 * findings counted apart. */
void cli_verdict_line(const cli_verdict *v, int64_t run, tftap_buf *b);
/* The reasons alone ("the command exited 1; 1 call failed"), nothing for a
 * run that did not fail. */
void cli_verdict_short(const cli_verdict *v, tftap_buf *b);
/* {"failed", "running", "checked", "exit_code", "failed_calls", "records_lost",
 * "tolerated", "unconfirmed", "rejected": [{call_id, method, address, type_name, rule,
 * path, expected, actual, message}]} */
void cli_verdict_json(const cli_verdict *v, tftap_buf *b);

#endif
