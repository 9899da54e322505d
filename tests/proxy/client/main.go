// Command proxyclient drives a provider the way OpenTofu does (go-plugin
// client, automatic mutual TLS, magic cookie, protocol versions 5 and 6) and
// checks what tftap's shim relays against the provider spoken to directly.
//
// Calls go through grpc with a pass-through codec: requests are built from
// protobuf wire primitives and responses are compared as the bytes received,
// so "byte-identical" means exactly that.
//
//	proxyclient compare -shim SHIM -direct PROVIDER -type TYPE
//	proxyclient cancel  -shim SHIM -type TYPE -marker FILE
//	proxyclient crash   -shim SHIM -direct PROVIDER -type TYPE
//	proxyclient hold    -shim SHIM -type TYPE -marker FILE -info FILE
//	proxyclient latency -shim PLUGIN [-n N] [-warm W] [-hook CMD] [-plain]
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/rpc"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const cookie = "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2"

// rawCodec passes bytes through untouched. It calls itself "proto" so the
// content type on the wire is the one real clients send.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// rawPlugin hands out the plugin's grpc connection itself.
type rawPlugin struct{}

func (rawPlugin) Server(*plugin.MuxBroker) (any, error) { return nil, errors.New("grpc only") }
func (rawPlugin) Client(*plugin.MuxBroker, *rpc.Client) (any, error) {
	return nil, errors.New("grpc only")
}
func (rawPlugin) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error { return errors.New("client only") }
func (rawPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return c, nil
}

// syncBuffer keeps what the plugin wrote on stderr (go-plugin re-logs each
// line through our logger) so tests can look for the provider's own words.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Contains(s string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Contains(b.buf.Bytes(), []byte(s))
}

func (b *syncBuffer) Count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Count(b.buf.Bytes(), []byte(s))
}

type provider struct {
	log    *syncBuffer
	client *plugin.Client
	conn   *grpc.ClientConn
	proto  int
	svc    string
}

// plain turns automatic mutual TLS off: both legs then speak plaintext.
var plain bool

func launch(path string, env []string) (*provider, error) {
	cmd := exec.Command(path)
	cmd.Env = append(os.Environ(), env...)
	log := &syncBuffer{}
	logger := hclog.New(&hclog.LoggerOptions{Name: "proxyclient", Level: hclog.Warn,
		Output: io.MultiWriter(os.Stderr, log)})
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: plugin.HandshakeConfig{
			MagicCookieKey: "TF_PLUGIN_MAGIC_COOKIE", MagicCookieValue: cookie,
		},
		VersionedPlugins: map[int]plugin.PluginSet{
			5: {"provider": rawPlugin{}},
			6: {"provider": rawPlugin{}},
		},
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Managed:          true,
		AutoMTLS:         !plain,
		Logger:           logger,
		GRPCDialOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(math.MaxInt32), grpc.MaxCallSendMsgSize(math.MaxInt32))},
	})
	rpcClient, err := client.Client()
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	raw, err := rpcClient.Dispense("provider")
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("dispense: %w", err)
	}
	p := &provider{log: log, client: client, conn: raw.(*grpc.ClientConn), proto: client.NegotiatedVersion()}
	p.svc = fmt.Sprintf("/tfplugin%d.Provider/", p.proto)
	return p, nil
}

// method picks the protocol's name for a call that was renamed in v6.
func (p *provider) method(v5, v6 string) string {
	if p.proto == 5 {
		return p.svc + v5
	}
	return p.svc + v6
}

func (p *provider) call(ctx context.Context, method string, req []byte) ([]byte, error) {
	var resp []byte
	err := p.conn.Invoke(ctx, method, &req, &resp, grpc.ForceCodec(rawCodec{}))
	return resp, err
}

// ---- the sequence of calls tofu makes for a small plan and apply ------------

type step struct {
	name          string
	method        string
	req           []byte
	deterministic bool
}

func providerConfig() []byte {
	return mpMap(map[string][]byte{"label": mpNil(), "token": mpNil()})
}

func triggerConfig() []byte {
	return mpMap(map[string][]byte{
		"id": mpNil(),
		// One key: the provider writes maps in Go's random map order, and
		// two answers must be comparable byte for byte.
		"triggers": mpMap(map[string][]byte{"a": mpStr("1")}),
	})
}

func petConfig() []byte {
	return mpMap(map[string][]byte{
		"id": mpNil(), "length": mpNil(), "separator": mpNil(), "prefix": mpStr("tftap"),
		"keepers": mpNil(),
	})
}

func check(cond bool, format string, args ...any) {
	if !cond {
		fmt.Fprintf(os.Stderr, "proxyclient: FAIL: "+format+"\n", args...)
		// Leave no provider behind: a failed test must not orphan the
		// plugins it started (through tftap or directly).
		plugin.CleanupClients()
		os.Exit(1)
	}
}

func ok(format string, args ...any) { fmt.Printf("ok - "+format+"\n", args...) }

func planRequest(typ string, config []byte) []byte {
	return cat(
		pbString(1, typ),
		pbBytes(2, dv(mpNil())), // prior_state: creating
		pbBytes(3, dv(config)),  // proposed_new_state: config, computed null
		pbBytes(4, dv(config)),
	)
}

func applyRequest(typ string, config, planResp []byte) []byte {
	planned := pbField(planResp, 1)
	private := pbField(planResp, 3)
	return cat(
		pbString(1, typ),
		pbBytes(2, dv(mpNil())),
		pbBytes(3, planned),
		pbBytes(4, dv(config)),
		pbBytes(5, private),
	)
}

func diagnostics(resp []byte, field int) []string {
	var out []string
	for _, d := range pbFields(resp, field) {
		out = append(out, string(pbField(d, 2))+": "+string(pbField(d, 3)))
	}
	return out
}

func cmdCompare(args []string) {
	fs := flag.NewFlagSet("compare", flag.ExitOnError)
	shim := fs.String("shim", "", "shim script")
	direct := fs.String("direct", "", "real provider")
	typ := fs.String("type", "", "provider type name, e.g. tftest5")
	latencyN := fs.Int("latency", 300, "unary calls timed each way")
	fs.BoolVar(&plain, "plain", false, "no TLS (TF_DISABLE_PLUGIN_TLS)")
	_ = fs.Parse(args)

	ps, err := launch(*shim, nil)
	check(err == nil, "launch through tftap: %v", err)
	pd, err := launch(*direct, nil)
	check(err == nil, "launch directly: %v", err)
	check(ps.proto == pd.proto, "negotiated protocol %d through tftap, %d directly", ps.proto, pd.proto)
	ok("handshake through tftap: protocol %d", ps.proto)
	ctx := context.Background()

	big := strings.Repeat("tftap relays seventeen mebibytes ", (17<<20)/33+1)
	echoConfig := mpMap(map[string][]byte{
		"input":  mpArray(mpBin([]byte(`"string"`)), mpStr(big)),
		"result": mpNil(),
	})
	steps := []step{
		{"GetProviderSchema", ps.method("GetSchema", "GetProviderSchema"), nil, true},
		{"ValidateProviderConfig", ps.method("PrepareProviderConfig", "ValidateProviderConfig"),
			pbBytes(1, dv(providerConfig())), true},
		{"ConfigureProvider", ps.method("Configure", "ConfigureProvider"),
			cat(pbString(1, "1.10.0"), pbBytes(2, dv(providerConfig()))), true},
		{"ValidateResourceConfig", ps.method("ValidateResourceTypeConfig", "ValidateResourceConfig"),
			cat(pbString(1, *typ+"_trigger"), pbBytes(2, dv(triggerConfig()))), true},
		{"PlanResourceChange trigger", ps.svc + "PlanResourceChange",
			planRequest(*typ+"_trigger", triggerConfig()), true},
		{"PlanResourceChange pet", ps.svc + "PlanResourceChange",
			planRequest(*typ+"_pet", petConfig()), true},
		{"ReadDataSource echo (17 MiB each way)", ps.svc + "ReadDataSource",
			cat(pbString(1, *typ+"_echo"), pbBytes(2, dv(echoConfig))), true},
	}
	results := map[string][]byte{}
	for _, s := range steps {
		rs, err := ps.call(ctx, s.method, s.req)
		check(err == nil, "%s through tftap: %v", s.name, err)
		rd, err := pd.call(ctx, s.method, s.req)
		check(err == nil, "%s directly: %v", s.name, err)
		// Go's protobuf writes map entries in random order, so two answers
		// of the same provider differ in order only; compare the fields as
		// a multiset of their exact bytes.
		if os.Getenv("PROXYCLIENT_DUMP") != "" {
			fmt.Printf("%s\n  tftap:  %q\n  direct: %q\n", s.name, trunc(rs), trunc(rd))
		}
		check(bytes.Equal(pbCanonical(rs), pbCanonical(rd)),
			"%s: %d bytes through tftap differ from %d bytes directly", s.name, len(rs), len(rd))
		ok("%s: %d bytes, identical through tftap and directly", s.name, len(rs))
		results[s.name] = rs
	}
	schema := results["GetProviderSchema"]
	check(len(pbFields(schema, 2)) >= 3, "schema lists %d resource types", len(pbFields(schema, 2)))
	check(len(results["ReadDataSource echo (17 MiB each way)"]) > 16<<20, "echo response too small")
	check(len(diagnostics(results["ReadDataSource echo (17 MiB each way)"], 2)) == 0, "echo diagnostics: %v",
		diagnostics(results["ReadDataSource echo (17 MiB each way)"], 2))

	// Apply: ids are random, so both must succeed and carry the config.
	for _, typeSuffix := range []string{"_trigger", "_pet"} {
		cfg := triggerConfig()
		if typeSuffix == "_pet" {
			cfg = petConfig()
		}
		plan := results["PlanResourceChange "+strings.TrimPrefix(typeSuffix, "_")]
		check(len(diagnostics(plan, 4)) == 0, "plan diagnostics: %v", diagnostics(plan, 4))
		req := applyRequest(*typ+typeSuffix, cfg, plan)
		rs, err := ps.call(ctx, ps.svc+"ApplyResourceChange", req)
		check(err == nil, "apply %s through tftap: %v", typeSuffix, err)
		rd, err := pd.call(ctx, pd.svc+"ApplyResourceChange", req)
		check(err == nil, "apply %s directly: %v", typeSuffix, err)
		check(len(diagnostics(rs, 3)) == 0, "apply diagnostics through tftap: %v", diagnostics(rs, 3))
		check(len(diagnostics(rd, 3)) == 0, "apply diagnostics directly: %v", diagnostics(rd, 3))
		stS, stD := pbField(pbField(rs, 1), 1), pbField(pbField(rd, 1), 1)
		check(len(stS) > 0 && len(stD) > 0, "apply returned no state")
		ok("ApplyResourceChange %s%s: new state %d bytes through tftap, %d directly", *typ, typeSuffix, len(stS), len(stD))
	}

	// Unary calls that take tftap's general (streaming) path: the health
	// check go-plugin serves, and methods the provider does not have. Their
	// answers, or status codes and messages, must be those given directly.
	// (The plugin-protocol methods above take its short unary path.)
	{
		rs, err := ps.call(ctx, "/grpc.health.v1.Health/Check", pbString(1, "plugin"))
		check(err == nil, "health check through tftap: %v", err)
		rd, err := pd.call(ctx, "/grpc.health.v1.Health/Check", pbString(1, "plugin"))
		check(err == nil, "health check directly: %v", err)
		check(bytes.Equal(rs, rd), "health check: %q through tftap, %q directly", rs, rd)
		ok("health check (general path): %d bytes, identical through tftap and directly", len(rs))
		for _, m := range []string{ps.svc + "NoSuchMethod", "/no.such.Service/Call"} {
			_, errS := ps.call(ctx, m, []byte("x"))
			_, errD := pd.call(ctx, m, []byte("x"))
			stS, stD := status.Convert(errS), status.Convert(errD)
			check(stD.Code() != codes.OK, "%s: no error directly", m)
			check(stS.Code() == stD.Code() && stS.Message() == stD.Message(),
				"%s: %v %q through tftap, %v %q directly", m, stS.Code(), stS.Message(), stD.Code(), stD.Message())
			ok("%s: %v through tftap as directly", m, stS.Code())
		}
	}

	// A bidirectional stream with several messages each way (go-plugin
	// registers gRPC server reflection on every plugin): requests are sent
	// back to back before any answer is read, then the stream is closed.
	{
		svc := fmt.Sprintf("tfplugin%d.Provider", ps.proto)
		reqs := [][]byte{
			pbString(7, "*"),                     // list_services
			pbString(4, svc),                     // file_containing_symbol
			pbString(3, "no/such/file.proto"),    // file_by_filename: an error answer
			pbString(4, "grpc.health.v1.Health"), // another file
		}
		rs, err := reflectStream(ctx, ps, reqs)
		check(err == nil, "reflection stream through tftap: %v", err)
		rd, err := reflectStream(ctx, pd, reqs)
		check(err == nil, "reflection stream directly: %v", err)
		check(len(rs) == len(reqs) && len(rd) == len(reqs), "stream answers: %d through tftap, %d directly", len(rs), len(rd))
		for i := range rs {
			check(bytes.Equal(pbCanonical(rs[i]), pbCanonical(rd[i])),
				"stream answer %d: %d bytes through tftap differ from %d directly", i, len(rs[i]), len(rd[i]))
		}
		sizes := make([]int, len(rs))
		for i := range rs {
			sizes[i] = len(rs[i])
		}
		check(sizes[1] > 1000, "the provider's file descriptor is only %d bytes", sizes[1])
		ok("bidirectional stream: %d requests sent back to back, answers of %v bytes identical through tftap and directly", len(reqs), sizes)
	}

	// Many calls in flight at once, as tofu makes them: each answer must
	// still be the one the provider gives directly.
	{
		req := planRequest(*typ+"_trigger", triggerConfig())
		want := pbCanonical(results["PlanResourceChange trigger"])
		tS, err := concurrentCalls(ctx, ps, ps.svc+"PlanResourceChange", req, want, 32, 20)
		check(err == nil, "concurrent plans through tftap: %v", err)
		tD, err := concurrentCalls(ctx, pd, pd.svc+"PlanResourceChange", req, want, 32, 20)
		check(err == nil, "concurrent plans directly: %v", err)
		ok("640 plans from 32 concurrent callers through tftap, each answered as directly")
		fmt.Printf("concurrency: 640 plans by 32 callers took %v through tftap, %v directly\n", tS, tD)
	}

	// Latency of a small unary call, sequentially, through tftap and directly.
	if *latencyN > 0 {
		req := pbBytes(1, dv(providerConfig()))
		m := ps.method("PrepareProviderConfig", "ValidateProviderConfig")
		tS := timeCalls(ctx, ps, m, req, *latencyN)
		tD := timeCalls(ctx, pd, m, req, *latencyN)
		fmt.Printf("latency: ValidateProviderConfig median %v through tftap, %v directly (%d calls each)\n",
			tS, tD, *latencyN)
	}

	ps.client.Kill()
	pd.client.Kill()
	ok("both shut down")
}

func trunc(b []byte) []byte {
	if len(b) > 400 {
		return b[:400]
	}
	return b
}

// reflectStream sends all requests on one ServerReflectionInfo stream,
// closes its side, and reads answers to the end.
func reflectStream(ctx context.Context, p *provider, reqs [][]byte) ([][]byte, error) {
	desc := &grpc.StreamDesc{StreamName: "ServerReflectionInfo", ServerStreams: true, ClientStreams: true}
	st, err := p.conn.NewStream(ctx, desc, "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
		grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return nil, err
	}
	for _, r := range reqs {
		r := r
		if err := st.SendMsg(&r); err != nil {
			return nil, err
		}
	}
	if err := st.CloseSend(); err != nil {
		return nil, err
	}
	var out [][]byte
	for {
		var m []byte
		err := st.RecvMsg(&m)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
}

func concurrentCalls(ctx context.Context, p *provider, method string, req, want []byte,
	callers, each int) (time.Duration, error) {
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	t0 := time.Now()
	for g := 0; g < callers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				got, err := p.call(ctx, method, req)
				if err == nil && !bytes.Equal(pbCanonical(got), want) {
					err = fmt.Errorf("answer differs: %q", got)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return time.Since(t0), <-errs
}

func timeCalls(ctx context.Context, p *provider, method string, req []byte, n int) time.Duration {
	d := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t0 := time.Now()
		_, err := p.call(ctx, method, req)
		check(err == nil, "timed call: %v", err)
		d = append(d, time.Since(t0))
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

// thingConfig builds a configuration for TYPE_thing from the provider's own
// schema: every attribute null, blocks empty, then the given overrides.
func thingConfig(schemaResp []byte, typeName string, set map[string][]byte) []byte {
	var block []byte
	for _, entry := range pbFields(schemaResp, 2) { // resource_schemas
		if string(pbField(entry, 1)) == typeName {
			block = pbField(pbField(entry, 2), 2)
		}
	}
	check(block != nil, "no schema for %s", typeName)
	obj := map[string][]byte{}
	for _, a := range pbFields(block, 2) {
		obj[string(pbField(a, 1))] = mpNil()
	}
	for _, b := range pbFields(block, 3) {
		name := string(pbField(b, 1))
		switch pbVarint(b, 3) { // nesting: 1 single, 2 list, 3 set, 4 map, 5 group
		case 2, 3:
			obj[name] = mpArray()
		case 4:
			obj[name] = mpMap(nil)
		default:
			obj[name] = mpNil()
		}
	}
	for k, v := range set {
		obj[k] = v
	}
	return mpMap(obj)
}

func prepareThing(ctx context.Context, p *provider, typ, fail string) []byte {
	schema, err := p.call(ctx, p.method("GetSchema", "GetProviderSchema"), nil)
	check(err == nil, "schema: %v", err)
	_, err = p.call(ctx, p.method("Configure", "ConfigureProvider"),
		cat(pbString(1, "1.10.0"), pbBytes(2, dv(providerConfig()))))
	check(err == nil, "configure: %v", err)
	cfg := thingConfig(schema, typ+"_thing", map[string][]byte{"fail": mpStr(fail)})
	plan, err := p.call(ctx, p.svc+"PlanResourceChange", planRequest(typ+"_thing", cfg))
	check(err == nil, "plan thing: %v", err)
	check(len(diagnostics(plan, 4)) == 0, "plan thing diagnostics: %v", diagnostics(plan, 4))
	return applyRequest(typ+"_thing", cfg, plan)
}

func waitFile(path string) {
	for i := 0; i < 600; i++ {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	check(false, "the provider never started hanging (%s)", path)
}

func cmdCancel(args []string) {
	fs := flag.NewFlagSet("cancel", flag.ExitOnError)
	shim := fs.String("shim", "", "shim script")
	typ := fs.String("type", "", "provider type name")
	marker := fs.String("marker", "", "file the provider touches when it hangs")
	_ = fs.Parse(args)

	p, err := launch(*shim, []string{"TFTEST_HANG_MARKER=" + *marker})
	check(err == nil, "launch: %v", err)
	ctx := context.Background()
	apply := prepareThing(ctx, p, *typ, "hang")

	// The client cancels while the provider is in the middle of the call.
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := p.call(cctx, p.svc+"ApplyResourceChange", apply); done <- err }()
	waitFile(*marker)
	cancel()
	err = <-done
	check(status.Code(err) == codes.Canceled, "cancelled apply: want Canceled, got %v", err)
	// The provider itself must see the cancellation: its hang ends and it
	// logs that on stderr, which reaches us through tftap.
	const said = "the apply was cancelled while hanging"
	for i := 0; i < 600 && !p.log.Contains(said); i++ {
		time.Sleep(50 * time.Millisecond)
	}
	check(p.log.Contains(said), "the provider never saw the cancellation (no %q on its stderr)", said)
	ok("cancelled call: %v, and the provider saw the cancellation", status.Code(err))

	// A deadline travels with the call and ends it the same way. Both ends
	// keep it (the provider has it from the call's grpc-timeout), so which
	// fires first is a race a busy machine can tip: our DeadlineExceeded,
	// or the provider's answer that its hang was cancelled. Either way the
	// provider must have seen it. Long enough for the call to reach the
	// provider on a busy machine under ASan, or it would never hang.
	_ = os.Remove(*marker)
	seen := p.log.Count(said)
	dctx, dcancel := context.WithTimeout(ctx, 8*time.Second)
	resp, err := p.call(dctx, p.svc+"ApplyResourceChange", apply)
	dcancel()
	answered := err == nil && strings.Contains(strings.Join(diagnostics(resp, 3), "\n"), said)
	check(status.Code(err) == codes.DeadlineExceeded || answered,
		"apply past its deadline: want DeadlineExceeded or the provider's answer that it was cancelled, got %v %v",
		err, diagnostics(resp, 3))
	for i := 0; i < 600 && p.log.Count(said) <= seen; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	check(p.log.Count(said) > seen, "the provider never saw the deadline (no second %q on its stderr)", said)
	ok("call past its deadline: %v (the provider answered: %v), and the provider saw the deadline",
		status.Code(err), answered)

	// The relay and the provider are still in service.
	_, err = p.call(ctx, p.method("PrepareProviderConfig", "ValidateProviderConfig"), pbBytes(1, dv(providerConfig())))
	check(err == nil, "call after cancellation: %v", err)
	ok("calls still work after cancellation")
	p.client.Kill()
}

// crashOnce applies a thing that kills its provider mid-call and reports the
// status the client saw and whether the plugin process went away.
func crashOnce(path, typ string) (codes.Code, bool) {
	p, err := launch(path, nil)
	check(err == nil, "launch %s: %v", path, err)
	ctx := context.Background()
	apply := prepareThing(ctx, p, typ, "kill")
	_, err = p.call(ctx, p.svc+"ApplyResourceChange", apply)
	code := status.Code(err)
	exited := false
	for i := 0; i < 400 && !exited; i++ {
		exited = p.client.Exited()
		time.Sleep(50 * time.Millisecond)
	}
	p.client.Kill()
	return code, exited
}

func cmdCrash(args []string) {
	fs := flag.NewFlagSet("crash", flag.ExitOnError)
	shim := fs.String("shim", "", "shim script")
	direct := fs.String("direct", "", "real provider")
	typ := fs.String("type", "", "provider type name")
	_ = fs.Parse(args)

	codeD, exitedD := crashOnce(*direct, *typ)
	codeS, exitedS := crashOnce(*shim, *typ)
	check(codeD == codes.Unavailable, "directly: want Unavailable, got %v", codeD)
	check(codeS == codeD, "provider crash mid-call: %v through tftap, %v directly", codeS, codeD)
	check(exitedD && exitedS, "plugin process still running after the crash (tftap: %v, direct: %v)", !exitedS, !exitedD)
	ok("provider killed mid-call: client sees %v through tftap as directly, and tftap exits", codeS)
}

// cmdHold starts a hanging call and waits to be killed; it writes the shim's
// pid, its socket and the provider's pid to -info first.
func cmdHold(args []string) {
	fs := flag.NewFlagSet("hold", flag.ExitOnError)
	shim := fs.String("shim", "", "shim script")
	typ := fs.String("type", "", "provider type name")
	marker := fs.String("marker", "", "file the provider touches when it hangs")
	info := fs.String("info", "", "where to write: tftap pid, socket, provider pid")
	_ = fs.Parse(args)

	p, err := launch(*shim, []string{"TFTEST_HANG_MARKER=" + *marker})
	check(err == nil, "launch: %v", err)
	ctx := context.Background()
	apply := prepareThing(ctx, p, *typ, "hang")
	rc := p.client.ReattachConfig()
	check(rc != nil, "no reattach config")
	go func() { _, _ = p.call(ctx, p.svc+"ApplyResourceChange", apply) }()
	waitFile(*marker)
	children, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", rc.Pid, rc.Pid))
	content := fmt.Sprintf("%d %s %s\n", rc.Pid, rc.Addr.String(), strings.TrimSpace(string(children)))
	check(os.WriteFile(*info+".tmp", []byte(content), 0o644) == nil, "write info")
	check(os.Rename(*info+".tmp", *info) == nil, "rename info")
	select {} // until killed
}

// cmdLatency times N sequential small unary calls to one plugin (a shim or
// a provider), after W warm-up calls. With -hook, "CMD start PID" runs
// before the timed calls and "CMD stop PID" after them (PID: the plugin
// process), so that a profiler or counter can cover exactly those calls.
// A measuring aid for docs/proxy.md, not a test.
func cmdLatency(args []string) {
	fs := flag.NewFlagSet("latency", flag.ExitOnError)
	shim := fs.String("shim", "", "plugin to start (shim script or provider)")
	n := fs.Int("n", 2000, "timed calls")
	warm := fs.Int("warm", 200, "warm-up calls")
	hook := fs.String("hook", "", "command run with start|stop PID around the timed calls")
	fs.BoolVar(&plain, "plain", false, "no TLS")
	_ = fs.Parse(args)

	p, err := launch(*shim, nil)
	check(err == nil, "launch: %v", err)
	defer p.client.Kill()
	ctx := context.Background()
	req := pbBytes(1, dv(providerConfig()))
	m := p.method("PrepareProviderConfig", "ValidateProviderConfig")
	for i := 0; i < *warm; i++ {
		_, err := p.call(ctx, m, req)
		check(err == nil, "warm-up call: %v", err)
	}
	pid := strconv.Itoa(p.client.ReattachConfig().Pid)
	runHook := func(what string) {
		if *hook == "" {
			return
		}
		out, err := exec.Command(*hook, what, pid).CombinedOutput()
		os.Stderr.Write(out)
		check(err == nil, "hook %s: %v", what, err)
	}
	runHook("start")
	d := make([]time.Duration, 0, *n)
	t0 := time.Now()
	for i := 0; i < *n; i++ {
		t := time.Now()
		_, err := p.call(ctx, m, req)
		check(err == nil, "timed call: %v", err)
		d = append(d, time.Since(t))
	}
	total := time.Since(t0)
	runHook("stop")
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	fmt.Printf("latency: %d calls in %v: p50 %v p90 %v p99 %v min %v\n", *n, total,
		d[len(d)/2], d[len(d)*9/10], d[len(d)*99/100], d[0])
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: proxyclient compare|cancel|crash|hold|latency ARGS")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "compare":
		cmdCompare(os.Args[2:])
	case "cancel":
		cmdCancel(os.Args[2:])
	case "crash":
		cmdCrash(os.Args[2:])
	case "hold":
		cmdHold(os.Args[2:])
	case "latency":
		cmdLatency(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, "proxyclient: unknown command", os.Args[1])
		os.Exit(2)
	}
}
