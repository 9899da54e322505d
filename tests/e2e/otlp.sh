#!/usr/bin/env bash
# OTLP spans (issue 13): `tftap run --otlp URL` of a real plan exports one
# span per recorded call to a real OTLP/HTTP receiver (an OpenTelemetry
# Collector core built by scripts/build-peers, printing what it receives
# with its debug exporter), each in the TRACEPARENT's trace under its span,
# named and attributed like the record; OTEL_EXPORTER_OTLP_ENDPOINT alone
# does the same, all of a run's spans in one trace; a receiver that is not
# there leaves the run successful and its record whole, the drop logged.
. "$(dirname "$0")/lib.sh"
need_peers
RECV=$PEERS/bin/otlprecv
[ -x "$RECV" ] || cannot_run "peers missing: $RECV (run scripts/build-peers)"
w=$WORK/w db=$WORK/db/tftap.db log=$WORK/db/tftap.log
mkdir -p "$WORK/db"
new_dir "$top_srcdir/examples/basic" "$w"
(cd "$w" && tofu init -input=false -no-color >/dev/null) || not_ok "init"

# A loopback port free now (the kernel's pick), for the receiver or for nobody.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The receiver's address on loopback, plain HTTP (OTLP/HTTP): built from its
# parts, as tftap builds the path from OTEL_EXPORTER_OTLP_ENDPOINT.
loopback() { printf '%s://127.0.0.1:%s' http "$1"; } # PORT
port=$(free_port)
base=$(loopback "$port")
traces=$base/v1/traces
cat >"$WORK/recv.yaml" <<EOF
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:$port
exporters:
  debug:
    verbosity: detailed
service:
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [debug]
  telemetry:
    metrics:
      level: none
EOF
"$RECV" --config "$WORK/recv.yaml" >"$WORK/recv.out" 2>"$WORK/recv.err" &
recv_pid=$!
stop_recv() { kill "$recv_pid" 2>/dev/null && wait "$recv_pid" 2>/dev/null; }
trap 'stop_recv; cleanup_work' EXIT
wait_for 600 grep -q 'Everything is ready' "$WORK/recv.err" || not_ok "the receiver did not start (see recv.err)"

# The spans the receiver printed, one line each: trace id, parent id, name,
# then the attributes that matter here, tab separated. Only tftap's scope.
spans() {
    awk '
      /^InstrumentationScope / { scope = $2 }
      /^Span #/ { flush(); inspan = (scope == "tftap"); tid = pid = name = ""; delete a; next }
      inspan && /^ *Trace ID *:/ { tid = $NF }
      inspan && /^ *Parent ID *:/ { pid = ($3 == ":" && NF == 4) ? $4 : "" }
      inspan && /^ *Name *:/ { name = $NF }
      inspan && /^ *-> / {
        k = $2; sub(/:$/, "", k); v = $0; sub(/^[^:]*: /, "", v)
        sub(/^[A-Za-z]+\(/, "", v); sub(/\)$/, "", v); a[k] = v
      }
      /ResourceSpans #|^ScopeSpans #/ { flush(); inspan = 0 }
      function flush() {
        if (inspan && name != "")
          printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", tid, pid, name, a["tftap.provider"],
            a["tftap.call_seq"], a["rpc.grpc.status_code"], a["tftap.request.bytes"],
            a["tftap.response.bytes"], a["tftap.type"], a["rpc.system"]
        name = ""
      }
      END { flush() }
    ' "$WORK/recv.err"
}
# The same from the record, for run $1: parent id left out (the caller adds it).
record_rows() { # RUN TRACE PARENT
    sqlite3 -separator $'\t' "$db" "
      SELECT '$2', '$3', c.rpc, p.provider, c.call_seq, c.status_code, c.request_bytes,
             c.response_bytes, coalesce(c.type_name, ''), 'grpc'
        FROM calls c JOIN processes p ON p.id = c.process_id
       WHERE c.run_id = $1" | sort
}
# span_count TRACE: how many spans of that trace arrived.
span_count() { spans | awk -F '\t' -v t="$1" '$1 == t' | wc -l; }
span_count_is() { [ "$(span_count "$1")" -ge "$2" ]; }

# ---- --otlp URL, TRACEPARENT from the environment (as tofu sets it) ----------
trace=4bf92f3577b34da6a3ce929d0e0e4736 parent=00f067aa0ba902b7
(cd "$w" && TRACEPARENT=00-$trace-$parent-01 "$TFTAP" run --db "$db" \
    --otlp "$traces" -- tofu plan -input=false -no-color \
    >"$WORK/plan.out" 2>"$WORK/plan.err")
check_eq "--otlp: plan exits 0" "$?" 0
run=$(last_run "$db")
ncalls=$("$TFTAP" calls --db "$db" --json "$run" | jq length)
check "--otlp: the run recorded calls" test "$ncalls" -gt 5
# The recorder sends its last spans after the record is complete: wait.
wait_for 300 span_count_is "$trace" "$ncalls"
check_eq "--otlp: one span per recorded call (tftap calls)" "$(span_count "$trace")" "$ncalls"
check_eq "--otlp: every span is the TRACEPARENT span's child, named and attributed as recorded" \
    "$(spans | awk -F '\t' -v t="$trace" '$1 == t' | sort)" "$(record_rows "$run" "$trace" "$parent")"
check "--otlp: a resource call names its type" \
    grep -q '^ *-> tftap.type: Str(tftest5_pet)' "$WORK/recv.err"
check "--otlp: spans are CLIENT spans" grep -q '^ *Kind *: Client' "$WORK/recv.err"
# go-plugin's streams and Shutdown end UNAVAILABLE as the provider exits:
# an expected close (v_calls.is_teardown), not an error, in a plan that succeeded.
check_eq "--otlp: no span is an error" "$(grep -c '^ *Status code *: Error' "$WORK/recv.err")" 0
check "--otlp: teardown is marked" grep -q '^ *-> tftap.teardown: Bool(true)' "$WORK/recv.err"
check "--otlp: the resource names the service" grep -q '^ *-> service.name: Str(tftap)' "$WORK/recv.err"
check "--otlp: nothing dropped, nothing logged" sh -c "! grep -q otlp '$log' 2>/dev/null"
check_eq "--otlp: no values without --otlp-values" \
    "$(grep -c -e '-> tftap.request.json:' -e '-> tftap.response.json:' "$WORK/recv.err")" 0

# ---- --otlp-values, with --record-sensitive: values, never a secret ----------
# The record keeps the provider's sensitive token and the thing's secret in
# clear (--record-sensitive); the spans carry every call's values as a
# default record would store them: redacted.
trace6=6e0a1b2c3d4e5f60718293a4b5c6d7e8 parent6=2b3c4d5e6f708192
(cd "$w" && TRACEPARENT=00-$trace6-$parent6-01 OTEL_SERVICE_NAME=ci-plans \
    OTEL_RESOURCE_ATTRIBUTES='deployment.environment=staging,team=infra%20ops' \
    "$TFTAP" run --db "$db" --record-sensitive --otlp-values \
    --otlp "$traces" -- tofu plan -input=false -no-color \
    >"$WORK/plan6.out" 2>"$WORK/plan6.err")
check_eq "--otlp-values: plan exits 0" "$?" 0
run6=$(last_run "$db")
n6=$("$TFTAP" calls --db "$db" --json "$run6" | jq length)
wait_for 300 span_count_is "$trace6" "$n6"
check_eq "--otlp-values: one span per recorded call, as recorded" \
    "$(spans | awk -F '\t' -v t="$trace6" '$1 == t' | sort)" "$(record_rows "$run6" "$trace6" "$parent6")"
for secret in not-a-real-secret hunter2; do
    check "--otlp-values: the record holds '$secret' in clear (--record-sensitive)" \
        test "$(sqlite3 "$db" "SELECT count(*) FROM calls WHERE run_id = $run6 AND request_json LIKE '%$secret%'")" -gt 0
    check_eq "--otlp-values: '$secret' never reaches the receiver" "$(grep -c -- "$secret" "$WORK/recv.err")" 0
done
# The spans of this trace, their values attribute by attribute.
span_attr() { # TRACE ATTRIBUTE: "name<TAB>value" for every span of TRACE having it
    awk -v t="$1" -v k="$2" '
      /^Span #/ { inspan = 1; tid = name = "" ; next }
      inspan && /^ *Trace ID *:/ { tid = $NF }
      inspan && /^ *Name *:/ { name = $NF }
      inspan && tid == t && index($0, "-> " k ": ") {
        v = substr($0, index($0, "-> " k ": ") + length(k) + 5)
        sub(/^[A-Za-z]+\(/, "", v); sub(/\)$/, "", v); print name "\t" v
      }' "$WORK/recv.err"
}
check_eq "--otlp-values: every span with a request carries it" \
    "$(span_attr "$trace6" tftap.request.json | wc -l)" \
    "$(sqlite3 "$db" "SELECT count(*) FROM calls WHERE run_id = $run6 AND request_json IS NOT NULL")"
span_attr "$trace6" tftap.request.json >"$WORK/req6"
span_attr "$trace6" tftap.response.json >"$WORK/resp6"
check "--otlp-values: ConfigureProvider's token is redacted as stored" \
    grep -qE '^ConfigureProvider.*"token":\{"\$sensitive":"hmac-sha256:[0-9a-f]{64}"\}' "$WORK/req6"
check "--otlp-values: a PlanResourceChange response is there" \
    grep -q '^PlanResourceChange.{"planned_state":' "$WORK/resp6"
check "--otlp-values: OTEL_SERVICE_NAME names the service" \
    grep -q '^ *-> service.name: Str(ci-plans)' "$WORK/recv.err"
check "--otlp-values: OTEL_RESOURCE_ATTRIBUTES are on the resource, decoded" \
    grep -q '^ *-> team: Str(infra ops)' "$WORK/recv.err"

# ---- --otlp-values, a sensitive variable: spans leave once core's marks are known ----
# The provider's schema marks nothing of it: only the configuration does, so
# tftap run exports the spans itself from the redacted record at the end.
ws=$WORK/ws
mkdir -p "$ws"
cat >"$ws/main.tf" <<'TF'
terraform {
  required_providers {
    tftest6 = { source = "tftap/tftest6" }
  }
}
variable "pw" {
  type      = string
  sensitive = true
}
resource "tftest6_thing" "t" { string_attr = "db-${var.pw}" }
TF
(cd "$ws" && tofu init -input=false -no-color >/dev/null) || not_ok "init of the sensitive variable's config"
trace7=7e0a1b2c3d4e5f60718293a4b5c6d7e8 parent7=3b3c4d5e6f708192
(cd "$ws" && TRACEPARENT=00-$trace7-$parent7-01 "$TFTAP" run --db "$db" --otlp-values \
    --otlp "$traces" -- tofu apply -auto-approve -input=false -no-color \
    -var pw=sensitive-var-value-77 >"$WORK/plan7.out" 2>"$WORK/plan7.err")
check_eq "--otlp-values, a sensitive variable: apply exits 0" "$?" 0
run7=$(last_run "$db")
n7=$("$TFTAP" calls --db "$db" --json "$run7" | jq '[.[] | select(.ended_us != null)] | length')
wait_for 300 span_count_is "$trace7" "$n7"
check_eq "--otlp-values, a sensitive variable: one span per answered call" \
    "$(spans | awk -F '\t' -v t="$trace7" '$1 == t' | wc -l)" "$n7"
check_eq "--otlp-values, a sensitive variable: its value never reaches the receiver" \
    "$(grep -c -- sensitive-var-value-77 "$WORK/recv.err")" 0
check "--otlp-values, a sensitive variable: the value is there, redacted" \
    bash -c "grep -q 'string_attr.:{.\$sensitive.:.hmac-sha256:' '$WORK/recv.err'"
before=$(spans | wc -l)

# ---- OTEL_EXPORTER_OTLP_ENDPOINT alone, no TRACEPARENT: one trace per run -----
(cd "$w" && OTEL_EXPORTER_OTLP_ENDPOINT=$base "$TFTAP" run --db "$db" \
    -- tofu plan -input=false -no-color >"$WORK/plan2.out" 2>"$WORK/plan2.err")
check_eq "env: plan exits 0" "$?" 0
run2=$(last_run "$db")
n2=$("$TFTAP" calls --db "$db" --json "$run2" | jq length)
new_spans() { spans | tail -n +$((before + 1)); }
new_count_is() { [ "$(new_spans | wc -l)" -ge "$1" ]; }
wait_for 300 new_count_is "$n2"
check_eq "env: one span per recorded call" "$(new_spans | wc -l)" "$n2"
check_eq "env: all in one trace" "$(new_spans | cut -f1 | sort -u | wc -l)" 1
trace2=$(new_spans | head -n 1 | cut -f1)
check "env: not the earlier trace" test "$trace2" != "$trace"
check_eq "env: roots (no parent), named and attributed as recorded" \
    "$(new_spans | sort)" "$(record_rows "$run2" "$trace2" "")"

# ---- --reattach: the providers tftap starts itself take the same settings ----
trace3=0af7651916cd43dd8448eb211c80319c parent3=b7ad6b7169203331
(cd "$w" && TRACEPARENT=00-$trace3-$parent3-01 "$TFTAP" run --reattach --db "$db" \
    --otlp "$traces" -- tofu plan -input=false -no-color \
    >"$WORK/plan4.out" 2>"$WORK/plan4.err")
check_eq "--reattach: plan exits 0" "$?" 0
run4=$(last_run "$db")
n4=$("$TFTAP" calls --db "$db" --json "$run4" | jq length)
wait_for 300 span_count_is "$trace3" "$n4"
check_eq "--reattach: one span per recorded call, under the TRACEPARENT span" \
    "$(spans | awk -F '\t' -v t="$trace3" '$1 == t' | sort)" "$(record_rows "$run4" "$trace3" "$parent3")"

# ---- tftap wrap --otlp: the URL lives in the shims' metadata -----------------
trace5=5f0c2a8e9b1d4c3e8a7f6b5d4c3b2a19 parent5=1a2b3c4d5e6f7081
eval "$(cd "$w" && "$TFTAP" wrap --db "$db" --otlp "$traces" --otlp-values \
    --out "$WORK/shims" 2>"$WORK/wrap.err")"
check "wrap --otlp: the shims' metadata holds the URL" \
    grep -qF "\"otlp\": \"$traces\"" "$WORK/shims/p0/tftap-shim.json"
check "wrap --otlp-values: and the values' opt-in" \
    grep -q '"otlp_values": true' "$WORK/shims/p0/tftap-shim.json"
(cd "$w" && TRACEPARENT=00-$trace5-$parent5-01 tofu plan -input=false -no-color >"$WORK/plan5.out" 2>&1)
check_eq "wrap --otlp: plan exits 0" "$?" 0
wait_for 300 recorders_done "$WORK/shims"
run5=$(last_run "$db")
n5=$("$TFTAP" calls --db "$db" --json "$run5" | jq length)
wait_for 300 span_count_is "$trace5" "$n5"
check_eq "wrap --otlp: one span per recorded call, under the TRACEPARENT span" \
    "$(spans | awk -F '\t' -v t="$trace5" '$1 == t' | sort)" "$(record_rows "$run5" "$trace5" "$parent5")"
check_eq "wrap --otlp-values: every span with a request carries it" \
    "$(span_attr "$trace5" tftap.request.json | wc -l)" \
    "$(sqlite3 "$db" "SELECT count(*) FROM calls WHERE run_id = $run5 AND request_json IS NOT NULL")"
check_eq "wrap --otlp-values: the token never reaches the receiver" "$(grep -c -- not-a-real-secret "$WORK/recv.err")" 0
export TF_CLI_CONFIG_FILE=$PEERS/tofurc

# ---- error diagnostics in an OK answer: the span is an error -----------------
# tftest6_thing with fail = "plan-error" answers PlanResourceChange with gRPC
# OK and an error diagnostic (v_calls.failed); tofu plan fails.
trace7=7a8b9c0d1e2f30415263748596a7b8c9 parent7=3c4d5e6f70819203
new_dir "$top_srcdir/tests/e2e/configs/crash" "$WORK/fail"
(cd "$WORK/fail" && tofu init -input=false -no-color >/dev/null) || not_ok "init (fail)"
(cd "$WORK/fail" && TRACEPARENT=00-$trace7-$parent7-01 "$TFTAP" run --db "$db" \
    --otlp "$traces" -- tofu plan -input=false -no-color \
    -var fail=plan-error >"$WORK/plan7.out" 2>"$WORK/plan7.err")
check_eq "plan-error: plan exits 1" "$?" 1
run7=$(last_run "$db")
n7=$("$TFTAP" calls --db "$db" --json "$run7" | jq length)
wait_for 300 span_count_is "$trace7" "$n7"
check_eq "plan-error: the record has the failed call, status OK" "$(sqlite3 "$db" \
    "SELECT count(*) FROM v_calls WHERE run_id = $run7 AND failed AND status_code = 0")" 1
# Name, status and message of each span of the trace that is an error.
error_spans() {
    awk -v t="$1" '
      /^Span #/ { inspan = 1; tid = name = ""; err = 0; next }
      inspan && /^ *Trace ID *:/ { tid = $NF }
      inspan && /^ *Name *:/ { name = $NF }
      inspan && tid == t && /^ *Status code *: Error/ { err = 1 }
      inspan && tid == t && err && /^ *Status message *:/ {
        m = $0; sub(/^ *Status message *: */, "", m); print name "\t" m; err = 0
      }' "$WORK/recv.err"
}
# A span that leaves while the run lasts does not carry the provider's
# words: they may quote a secret known only at the run's end.
check_eq "plan-error: its span alone is an error, the diagnostic's words withheld" \
    "$(error_spans "$trace7")" "$(printf 'PlanResourceChange\t')"
check_eq "plan-error: the span says they were withheld" \
    "$(span_attr "$trace7" tftap.status.withheld)" "$(printf 'PlanResourceChange\ttrue')"
check "plan-error: the span counts the error diagnostics" \
    grep -q '^ *-> tftap.diagnostics.errors: Int(1)' "$WORK/recv.err"
# With values, spans leave at the run's end from the redacted record: the
# words with them.
trace8=8a8b9c0d1e2f30415263748596a7b8c9 parent8=4c4d5e6f70819203
(cd "$WORK/fail" && TRACEPARENT=00-$trace8-$parent8-01 "$TFTAP" run --db "$db" --otlp-values \
    --otlp "$traces" -- tofu plan -input=false -no-color \
    -var fail=plan-error >"$WORK/plan8.out" 2>"$WORK/plan8.err")
check_eq "plan-error, --otlp-values: plan exits 1" "$?" 1
run8=$(last_run "$db")
n8=$("$TFTAP" calls --db "$db" --json "$run8" | jq '[.[] | select(.ended_us != null)] | length')
wait_for 300 span_count_is "$trace8" "$n8"
check_eq "plan-error, --otlp-values: the span has the diagnostic's summary" \
    "$(error_spans "$trace8")" "$(printf 'PlanResourceChange\ttftest: planned failure')"

# ---- a provider quoting a sensitive variable's value in its error ----------------
# (configs/quoted-secret): with values or without, it never reaches the receiver.
wq=$WORK/wq
new_dir "$top_srcdir/tests/e2e/configs/quoted-secret" "$wq"
(cd "$wq" && tofu init -input=false -no-color >/dev/null) || not_ok "init (quoted secret)"
for values in "" --otlp-values; do
    trace9=9a8b9c0d1e2f30415263748596a7b8c$([ -n "$values" ] && echo e || echo f)
    (cd "$wq" && TRACEPARENT=00-$trace9-5c4d5e6f70819203-01 TF_VAR_ratio=7315.0625 \
        "$TFTAP" run --db "$db" $values --otlp "$traces" -- tofu plan -input=false -no-color \
        >"$WORK/plan9.out" 2>&1)
    run9=$(last_run "$db")
    n9=$("$TFTAP" calls --db "$db" --json "$run9" | jq '[.[] | select(.ended_us != null)] | length')
    wait_for 300 span_count_is "$trace9" "$n9"
    check "quoted secret ${values:-live}: tofu shows the provider's words" \
        grep -q -F 7315.0625 "$WORK/plan9.out"
    check_eq "quoted secret ${values:-live}: every span arrived, none holds the value" \
        "$(span_count "$trace9") $(grep -c -F 7315.0625 "$WORK/recv.err")" "$n9 0"
done

# ---- a receiver that is not there: the run is not the worse for it -----------
stop_recv
dead=$(free_port)
dead_traces=$(loopback "$dead")/v1/traces
(cd "$w" && "$TFTAP" run --db "$db" --otlp "$dead_traces" \
    -- tofu plan -input=false -no-color >"$WORK/plan3.out" 2>"$WORK/plan3.err")
check_eq "dead receiver: plan exits 0" "$?" 0
check "dead receiver: the plan's output is whole" grep -q '^Plan: ' "$WORK/plan3.out"
run3=$(last_run "$db")
check "dead receiver: calls recorded" test "$("$TFTAP" calls --db "$db" --json "$run3" | jq length)" -gt 5
check_eq "dead receiver: nothing lost from the record" \
    "$("$TFTAP" runs --db "$db" --json | jq ".[] | select(.id == $run3) | .dropped")" 0
dropped_logged() { grep -qs "otlp: [0-9]* of [0-9]* spans were not exported to $dead_traces" "$log"; }
wait_for 300 dropped_logged
check "dead receiver: the drop is logged beside the database" dropped_logged
check "dead receiver: why, once per recorder" \
    grep -qF "otlp: cannot export to $dead_traces: Couldn't connect to server" "$log"
check "dead receiver: nothing of it in the command's output" sh -c "! grep -q 'otlp:' '$WORK/plan3.out'"
# At most tftap run's usual one line about the recorders' log (whether the
# recorders have logged the drop by the time it looks is up to them).
check_eq "dead receiver: on stderr at most the line about the log" \
    "$(grep -vc '^tftap: the recorders logged [0-9]* problem(s) in ' "$WORK/plan3.err")" 0

# ---- usage -------------------------------------------------------------------
"$TFTAP" run --otlp=ftp://x -- true 2>"$WORK/usage.err"
check_eq "--otlp=ftp://x: usage error" "$?" 2
check "--otlp: one line" test "$(wc -l <"$WORK/usage.err")" = 1
finish
