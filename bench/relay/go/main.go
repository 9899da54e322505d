// Command relaybench measures what a relay placed between a provider's
// client and the provider adds to each call (bench/relay/run.sh drives it).
//
//	relaybench unary [flags]   latency and calls/s of one small unary RPC,
//	                           directly and through each relay, interleaved
//	relaybench rss -exe PATH   peak memory of every process running PATH
//	                           (tftap's relay and recorder processes) until
//	                           SIGTERM, then a summary
//	relaybench cpu -- CMD...   run CMD as a child subreaper: its wall time,
//	                           then the CPU time of every process under it,
//	                           orphans included (tftap's recorder processes
//	                           are init's children otherwise)
//
// unary talks gRPC the way OpenTofu does: providers and tftap shims are
// started with a go-plugin client (magic cookie, protocol negotiation,
// automatic mutual TLS unless plaintext), then every call is made on the
// connection go-plugin dialed, with a pass-through codec so no time goes
// into protobuf on our side. Relays started by the script (nginx) and the
// plaintext provider behind them are dialed at the address given.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/rpc"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

const cookie = "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2"

// rawCodec sends and receives bytes untouched; it is named "proto" so the
// content type on the wire is the one real clients use.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = data
	return nil
}
func (rawCodec) Name() string { return "proto" }

// rawPlugin hands out go-plugin's grpc connection itself.
type rawPlugin struct{}

func (rawPlugin) Server(*plugin.MuxBroker) (any, error) { return nil, errors.New("grpc only") }
func (rawPlugin) Client(*plugin.MuxBroker, *rpc.Client) (any, error) {
	return nil, errors.New("grpc only")
}
func (rawPlugin) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error { return errors.New("client only") }
func (rawPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return c, nil
}

func die(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "relaybench: "+format+"\n", args...)
	plugin.CleanupClients()
	os.Exit(1)
}

// ---- /proc helpers -----------------------------------------------------------

var clockTick = 100.0 // USER_HZ on every Linux we run on

// cpuTicks is utime+stime of a process, in clock ticks (0 once it is gone).
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}

// children lists the direct children of pid (from every thread's list).
func children(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		b, _ := os.ReadFile(t)
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

func exeOf(pid int) string {
	s, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return s
}

// ---- targets -----------------------------------------------------------------

type target struct {
	name  string
	base  string // the target this one is compared against ("" for a baseline)
	conn  *grpc.ClientConn
	gp    *plugin.Client
	proto int
	svc   string

	relayPids []int // processes on the call path besides the provider (tftap's relay, nginx)
	sidePids  []int // processes off the path that still use a CPU (tftap's recorder)
	provPid   int

	seq, conc                  []time.Duration
	seqWall, concWall          time.Duration
	relayCPU, sideCPU, provCPU int64 // ticks while this target's blocks ran (side: whole run)
	sideStart                  int64
}

func (t *target) method(v5, v6 string) string {
	if t.proto == 5 {
		return t.svc + v5
	}
	return t.svc + v6
}

func (t *target) call(ctx context.Context, method string, req []byte) ([]byte, error) {
	var resp []byte
	err := t.conn.Invoke(ctx, method, &req, &resp, grpc.ForceCodec(rawCodec{}))
	return resp, err
}

var callOpts = grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32),
	grpc.MaxCallSendMsgSize(math.MaxInt32))

// launch starts path as OpenTofu starts a provider.
func launch(name, path string, mtls bool) *target {
	logger := hclog.New(&hclog.LoggerOptions{Name: "relaybench", Level: hclog.Warn, Output: os.Stderr})
	gp := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: plugin.HandshakeConfig{
			MagicCookieKey: "TF_PLUGIN_MAGIC_COOKIE", MagicCookieValue: cookie,
		},
		VersionedPlugins: map[int]plugin.PluginSet{
			5: {"provider": rawPlugin{}},
			6: {"provider": rawPlugin{}},
		},
		Cmd:              exec.Command(path),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Managed:          true,
		AutoMTLS:         mtls,
		Logger:           logger,
		GRPCDialOptions:  []grpc.DialOption{callOpts},
	})
	rc, err := gp.Client()
	if err != nil {
		die("%s: start %s: %v", name, path, err)
	}
	raw, err := rc.Dispense("provider")
	if err != nil {
		die("%s: dispense: %v", name, err)
	}
	t := &target{name: name, conn: raw.(*grpc.ClientConn), gp: gp, proto: gp.NegotiatedVersion()}
	t.svc = fmt.Sprintf("/tfplugin%d.Provider/", t.proto)
	pid := gp.ReattachConfig().Pid
	self := exeOf(pid)
	if filepath.Base(self) == "tftap" {
		// tftap's relay: its child is the provider; its recorder process
		// was forked twice (init's child) and is found by their pipe.
		t.relayPids = []int{pid}
		for _, c := range children(pid) {
			t.provPid = c
		}
		t.sidePids = recordersOf(pid, self)
	} else {
		t.provPid = pid
	}
	return t
}

// dial connects to a provider or relay started by someone else.
func dial(name, addr string, proto int, creds credentials.TransportCredentials, relayPid, provPid int) *target {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds), callOpts)
	if err != nil {
		die("%s: dial %s: %v", name, addr, err)
	}
	t := &target{name: name, conn: conn, proto: proto, provPid: provPid}
	t.svc = fmt.Sprintf("/tfplugin%d.Provider/", proto)
	if relayPid > 0 {
		t.relayPids = []int{relayPid}
	}
	return t
}

// pipesOf lists the pipe inodes among a process's open files.
func pipesOf(pid int) map[string]bool {
	out := map[string]bool{}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if strings.HasPrefix(l, "pipe:") {
			out[l] = true
		}
	}
	return out
}

// isRecorder tells tftap's recorder process by its files: stdin on
// /dev/null and the event pipe as fd 3 (proxy/recproc.c); it returns that
// pipe.
func isRecorder(pid int) (string, bool) {
	in, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/0", pid))
	ev, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/3", pid))
	return ev, in == "/dev/null" && strings.HasPrefix(ev, "pipe:")
}

// recordersOf finds the recorder processes whose event pipe relay holds.
func recordersOf(relay int, exe string) []int {
	mine := pipesOf(relay)
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == relay || exeOf(pid) != exe {
			continue
		}
		if ev, ok := isRecorder(pid); ok && mine[ev] {
			out = append(out, pid)
		}
	}
	return out
}

func ticks(pids []int) int64 {
	var n int64
	for _, p := range pids {
		n += cpuTicks(p)
	}
	return n
}

// ---- the calls -----------------------------------------------------------------

func providerConfig() []byte {
	return mpMap(map[string][]byte{"label": mpNil(), "token": mpNil()})
}

func triggerConfig() []byte {
	return mpMap(map[string][]byte{"id": mpNil(), "triggers": mpNil()})
}

type rpcSpec struct {
	method    string
	req       []byte
	diagField int // field of the response holding diagnostics
}

func spec(t *target, which, typ string) rpcSpec {
	switch which {
	case "validate":
		return rpcSpec{t.method("ValidateResourceTypeConfig", "ValidateResourceConfig"),
			cat(pbString(1, typ+"_trigger"), pbBytes(2, dv(triggerConfig()))), 1}
	case "plan":
		cfg := triggerConfig()
		return rpcSpec{t.svc + "PlanResourceChange",
			cat(pbString(1, typ+"_trigger"), pbBytes(2, dv(mpNil())), pbBytes(3, dv(cfg)), pbBytes(4, dv(cfg))), 4}
	case "metadata":
		return rpcSpec{t.svc + "GetMetadata", nil, 2}
	}
	die("unknown -rpc %q (validate, plan, metadata)", which)
	return rpcSpec{}
}

// prepare makes the calls OpenTofu makes before any resource call (so the
// recorder has the schema, as in a real run) and warms the connection up.
func prepare(ctx context.Context, t *target, rs rpcSpec, warm int) {
	if _, err := t.call(ctx, t.method("GetSchema", "GetProviderSchema"), nil); err != nil {
		die("%s: schema: %v", t.name, err)
	}
	_, err := t.call(ctx, t.method("Configure", "ConfigureProvider"),
		cat(pbString(1, "1.10.10"), pbBytes(2, dv(providerConfig()))))
	if err != nil {
		die("%s: configure: %v", t.name, err)
	}
	resp, err := t.call(ctx, rs.method, rs.req)
	if err != nil {
		die("%s: %s: %v", t.name, rs.method, err)
	}
	if d := pbFields(resp, rs.diagField); len(d) > 0 {
		die("%s: %s answered with %d diagnostics: %q", t.name, rs.method, len(d), d[0])
	}
	for i := 0; i < warm; i++ {
		if _, err := t.call(ctx, rs.method, rs.req); err != nil {
			die("%s: warm-up: %v", t.name, err)
		}
	}
}

func seqBlock(ctx context.Context, t *target, rs rpcSpec, n int) {
	c0, p0 := ticks(t.relayPids), cpuTicks(t.provPid)
	start := time.Now()
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if _, err := t.call(ctx, rs.method, rs.req); err != nil {
			die("%s: %v", t.name, err)
		}
		t.seq = append(t.seq, time.Since(t0))
	}
	t.seqWall += time.Since(start)
	t.relayCPU += ticks(t.relayPids) - c0
	t.provCPU += cpuTicks(t.provPid) - p0
}

func concBlock(ctx context.Context, t *target, rs rpcSpec, n, workers int) {
	c0, p0 := ticks(t.relayPids), cpuTicks(t.provPid)
	lat := make([][]time.Duration, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	start := time.Now()
	for w := 0; w < workers; w++ {
		each := n / workers
		if w < n%workers {
			each++
		}
		wg.Add(1)
		go func(w, each int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				t0 := time.Now()
				if _, err := t.call(ctx, rs.method, rs.req); err != nil {
					errs <- err
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		}(w, each)
	}
	wg.Wait()
	t.concWall += time.Since(start)
	t.relayCPU += ticks(t.relayPids) - c0
	t.provCPU += cpuTicks(t.provPid) - p0
	close(errs)
	if err := <-errs; err != nil {
		die("%s: concurrent: %v", t.name, err)
	}
	for _, l := range lat {
		t.conc = append(t.conc, l...)
	}
}

type stats struct {
	n                       int
	p50, p90, p99, max, avg time.Duration
}

func summarize(d []time.Duration) stats {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	pct := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		if i < 0 {
			i = 0
		}
		return s[i]
	}
	var sum time.Duration
	for _, v := range s {
		sum += v
	}
	return stats{len(s), pct(0.50), pct(0.90), pct(0.99), s[len(s)-1], sum / time.Duration(len(s))}
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// Which of the two tftap targets -shim starts (-only can drop one).
var tftapTLS, tftapPlain = true, true

func cmdUnary(args []string) {
	fs := flag.NewFlagSet("unary", flag.ExitOnError)
	direct := fs.String("direct", "", "the provider binary (started directly, mutual TLS)")
	shim := fs.String("shim", "", "a tftap shim script for the same provider (started through tftap)")
	shimNoRec := fs.String("shim-norec", "", "a shim for the same provider whose metadata names no database: tftap relaying without recording (plaintext), to tell the relay's cost from the recorder's")
	plainAddr := fs.String("plain-provider", "", "address (unix:PATH) of the same provider started by the script in plaintext")
	plainPid := fs.Int("plain-provider-pid", 0, "its pid")
	nginxAddr := fs.String("nginx", "", "address of nginx relaying (grpc_pass) to -plain-provider, plaintext")
	nginxPid := fs.Int("nginx-pid", 0, "nginx's pid (one process: master_process off)")
	tlsProvAddr := fs.String("tls-provider", "", "address of the same provider started by the script with TLS (for nginx over TLS)")
	tlsProvPid := fs.Int("tls-provider-pid", 0, "its pid")
	tlsProvCert := fs.String("tls-provider-cert", "", "PEM file: the certificate -tls-provider announced (trusted)")
	nginxTLSAddr := fs.String("nginx-tls", "", "address of nginx relaying to -tls-provider with TLS on both legs")
	nginxTLSPid := fs.Int("nginx-tls-pid", 0, "that nginx's pid")
	nginxTLSCA := fs.String("nginx-tls-cert", "", "PEM file: nginx's server certificate (trusted)")
	clientCert := fs.String("client-cert", "", "PEM file: the client certificate to present (with -client-key)")
	clientKey := fs.String("client-key", "", "PEM file: its key")
	typ := fs.String("type", "tftest5", "provider type name")
	which := fs.String("rpc", "validate", "the RPC: validate (ValidateResourceTypeConfig), plan (PlanResourceChange), metadata (GetMetadata)")
	n := fs.Int("n", 1000, "calls per block")
	rounds := fs.Int("rounds", 10, "rounds; each runs a sequential and a concurrent block on every target, in rotating order")
	workers := fs.Int("c", 8, "concurrent callers in the concurrent block")
	warm := fs.Int("warm", 300, "warm-up calls per target")
	only := fs.String("only", "", "comma-separated target names to keep (for profiling one of them)")
	_ = fs.Parse(args)

	if *only != "" {
		keep := map[string]bool{}
		for _, name := range strings.Split(*only, ",") {
			keep[name] = true
		}
		// Blank out what is not kept, before anything is started.
		if !keep["direct/tls"] {
			*direct = ""
		}
		if !keep["tftap/tls"] && !keep["tftap/plain"] {
			*shim = ""
		}
		tftapTLS, tftapPlain = keep["tftap/tls"], keep["tftap/plain"]
		if !keep["tftap-norec/plain"] {
			*shimNoRec = ""
		}
		if !keep["nginx/plain"] {
			*nginxAddr = ""
		}
		if !keep["direct/plain"] && *nginxAddr == "" {
			*plainAddr = ""
		}
		if !keep["nginx/tls"] {
			*nginxTLSAddr = ""
		}
		if !keep["direct/tls-script"] && *nginxTLSAddr == "" {
			*tlsProvAddr = ""
		}
	}

	var targets []*target
	if *direct != "" {
		targets = append(targets, launch("direct/tls", *direct, true))
	}
	if *shim != "" && tftapTLS {
		t := launch("tftap/tls", *shim, true)
		t.base = "direct/tls"
		targets = append(targets, t)
	}
	if *plainAddr != "" {
		targets = append(targets, dial("direct/plain", *plainAddr, 5, insecure.NewCredentials(), 0, *plainPid))
	}
	if *shim != "" && tftapPlain {
		t := launch("tftap/plain", *shim, false)
		t.base = "direct/plain"
		targets = append(targets, t)
	}
	if *shimNoRec != "" {
		t := launch("tftap-norec/plain", *shimNoRec, false)
		t.base = "direct/plain"
		targets = append(targets, t)
	}
	if *nginxAddr != "" {
		t := dial("nginx/plain", *nginxAddr, 5, insecure.NewCredentials(), *nginxPid, *plainPid)
		t.base = "direct/plain"
		targets = append(targets, t)
	}
	if *tlsProvAddr != "" || *nginxTLSAddr != "" {
		cert, err := tls.LoadX509KeyPair(*clientCert, *clientKey)
		if err != nil {
			die("client certificate: %v", err)
		}
		creds := func(caFile string) credentials.TransportCredentials {
			pem, err := os.ReadFile(caFile)
			if err != nil {
				die("%v", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				die("%s: no certificate", caFile)
			}
			return credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool,
				ServerName: "localhost", MinVersion: tls.VersionTLS12})
		}
		if *tlsProvAddr != "" {
			targets = append(targets, dial("direct/tls-script", *tlsProvAddr, 5, creds(*tlsProvCert), 0, *tlsProvPid))
		}
		if *nginxTLSAddr != "" {
			t := dial("nginx/tls", *nginxTLSAddr, 5, creds(*nginxTLSCA), *nginxTLSPid, *tlsProvPid)
			t.base = "direct/tls-script"
			targets = append(targets, t)
		}
	}
	if len(targets) == 0 {
		die("nothing to measure (give -direct, -shim, -plain-provider, -nginx ...)")
	}

	ctx := context.Background()
	rs := make([]rpcSpec, len(targets))
	for i, t := range targets {
		rs[i] = spec(t, *which, *typ)
		prepare(ctx, t, rs[i], *warm)
		t.sideStart = ticks(t.sidePids)
	}
	fmt.Fprintf(os.Stderr, "relaybench: %s, %d rounds x (%d sequential + %d by %d callers) per target, load %s\n",
		rs[0].method, *rounds, *n, *n, *workers, loadavg())
	for r := 0; r < *rounds; r++ {
		for k := range targets {
			i := (k + r) % len(targets)
			seqBlock(ctx, targets[i], rs[i], *n)
			concBlock(ctx, targets[i], rs[i], *n, *workers)
		}
	}
	for _, t := range targets {
		t.sideCPU = ticks(t.sidePids) - t.sideStart
	}
	report(targets, *which, *workers, rs[0].method)
	for _, t := range targets {
		if t.gp != nil {
			t.gp.Kill()
		}
		_ = t.conn.Close()
	}
}

func report(targets []*target, which string, workers int, method string) {
	byName := map[string]*target{}
	for _, t := range targets {
		byName[t.name] = t
	}
	fmt.Printf("RPC %s (%s), load average at the end %s\n\n", method, which, loadavg())
	fmt.Printf("%-18s %-5s %7s %8s %8s %8s %8s %9s | %9s %9s %9s\n", "target", "mode", "calls",
		"p50 us", "p90 us", "p99 us", "mean us", "calls/s", "relay CPU", "recorder", "provider")
	fmt.Printf("%-18s %-5s %7s %8s %8s %8s %8s %9s | %9s %9s %9s\n", "", "", "", "", "", "", "", "",
		"us/call", "us/call", "us/call")
	for _, t := range targets {
		total := len(t.seq) + len(t.conc)
		cpu := func(ticks int64) string {
			if total == 0 {
				return "-"
			}
			return fmt.Sprintf("%.1f", float64(ticks)/clockTick*1e6/float64(total))
		}
		relay, side := "-", "-"
		if len(t.relayPids) > 0 {
			relay = cpu(t.relayCPU)
		}
		if len(t.sidePids) > 0 {
			side = cpu(t.sideCPU)
		}
		prov := "-"
		if t.provPid > 0 {
			prov = cpu(t.provCPU)
		}
		for _, m := range []struct {
			mode string
			lat  []time.Duration
			wall time.Duration
		}{{"seq", t.seq, t.seqWall}, {fmt.Sprintf("c=%d", workers), t.conc, t.concWall}} {
			s := summarize(m.lat)
			fmt.Printf("%-18s %-5s %7d %8.0f %8.0f %8.0f %8.0f %9.0f | %9s %9s %9s\n", t.name, m.mode, s.n,
				us(s.p50), us(s.p90), us(s.p99), us(s.avg), float64(s.n)/m.wall.Seconds(), relay, side, prov)
			relay, side, prov = "", "", "" // CPU is per target, shown once
		}
	}
	fmt.Printf("\nAdded by the relay, against the direct connection of the same security:\n\n")
	fmt.Printf("%-18s %-5s %-18s %12s %12s %10s %10s %11s\n", "relay", "mode", "vs", "added p50 us",
		"added p99 us", "p50 ratio", "p99 ratio", "calls/s %")
	added := map[string][2]float64{}
	for _, t := range targets {
		b := byName[t.base]
		if t.base == "" || b == nil {
			continue
		}
		for _, m := range []struct {
			mode    string
			lat, bl []time.Duration
			w, bw   time.Duration
		}{{"seq", t.seq, b.seq, t.seqWall, b.seqWall},
			{fmt.Sprintf("c=%d", workers), t.conc, b.conc, t.concWall, b.concWall}} {
			s, bs := summarize(m.lat), summarize(m.bl)
			a50, a99 := us(s.p50-bs.p50), us(s.p99-bs.p99)
			rate, brate := float64(s.n)/m.w.Seconds(), float64(bs.n)/m.bw.Seconds()
			fmt.Printf("%-18s %-5s %-18s %12.0f %12.0f %9.2fx %9.2fx %+10.1f%%\n", t.name, m.mode, t.base,
				a50, a99, us(s.p50)/us(bs.p50), us(s.p99)/us(bs.p99), (rate/brate-1)*100)
			if m.mode == "seq" {
				added[t.name] = [2]float64{a50, a99}
			} else {
				added[t.name+" "+m.mode] = [2]float64{a50, a99}
			}
		}
	}
	pairs := [][2]string{{"tftap/plain", "nginx/plain"}, {"tftap-norec/plain", "nginx/plain"}, {"tftap/tls", "nginx/tls"}}
	first := true
	for _, p := range pairs {
		for _, suffix := range []string{"", fmt.Sprintf(" c=%d", workers)} {
			a, okA := added[p[0]+suffix]
			b, okB := added[p[1]+suffix]
			if !okA || !okB {
				continue
			}
			if first {
				fmt.Printf("\ntftap against nginx (added latency, tftap / nginx; below 1 means tftap adds less):\n\n")
				first = false
			}
			mode := "seq"
			if suffix != "" {
				mode = strings.TrimSpace(suffix)
			}
			// A relay that added nothing measurable (or "less than
			// nothing": noise) has no meaningful ratio.
			ratio := func(x, y float64) string {
				if y <= 0 {
					return "  n/a"
				}
				return fmt.Sprintf("%5.2fx", x/y)
			}
			fmt.Printf("%-32s %-5s p50 %6.0f / %6.0f us = %s   p99 %6.0f / %6.0f us = %s\n",
				p[0]+" vs "+p[1], mode, a[0], b[0], ratio(a[0], b[0]), a[1], b[1], ratio(a[1], b[1]))
		}
	}
}

// ---- rss: peak memory of tftap's processes --------------------------------------

type proc struct {
	hwm, rss int64 // kB, the largest seen
	recorder bool
	cli      bool            // not a shim: `tftap run` waiting for the CLI
	pipe     string          // a recorder's event pipe
	pipes    map[string]bool // a relay's pipes
}

func statusKB(b []byte, key string) int64 {
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, key+":") {
			f := strings.Fields(line[len(key)+1:])
			if len(f) > 0 {
				v, _ := strconv.ParseInt(f[0], 10, 64)
				return v
			}
		}
	}
	return 0
}

func cmdRSS(args []string) {
	fs := flag.NewFlagSet("rss", flag.ExitOnError)
	exe := fs.String("exe", "", "executable whose processes are watched (tftap)")
	interval := fs.Duration("interval", 20*time.Millisecond, "sampling interval")
	out := fs.String("o", "", "write the summary here (default stdout)")
	_ = fs.Parse(args)
	if *exe == "" {
		die("rss: -exe is required")
	}
	want, err := filepath.EvalSymlinks(*exe)
	if err != nil {
		die("rss: %v", err)
	}
	procs := map[int]*proc{}
	others := map[int]int64{} // the providers: the relays' children
	var peakSum int64
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	sample := func() {
		entries, _ := os.ReadDir("/proc")
		var sum int64
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if exeOf(pid) != want {
				continue
			}
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			if err != nil {
				continue
			}
			hwm := statusKB(b, "VmHWM")
			p := procs[pid]
			if p == nil {
				p = &proc{}
				p.pipe, p.recorder = isRecorder(pid)
				cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				args := strings.Split(string(cmd), "\x00")
				p.cli = !p.recorder && (len(args) < 2 || args[1] != "shim")
				p.pipes = map[string]bool{}
				procs[pid] = p
			}
			if !p.recorder && !p.cli {
				// A relay: its pipes (the recorder's comes a moment after
				// exec) and its child, the provider, shown for context.
				for k := range pipesOf(pid) {
					p.pipes[k] = true
				}
				for _, c := range children(pid) {
					if cb, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c)); err == nil {
						if h := statusKB(cb, "VmHWM"); h > others[c] {
							others[c] = h
						}
					}
				}
			}
			if hwm > p.hwm {
				p.hwm = hwm
			}
			rss := statusKB(b, "VmRSS")
			if rss > p.rss {
				p.rss = rss
			}
			if !p.cli {
				sum += rss // the shims' processes only
			}
		}
		if sum > peakSum {
			peakSum = sum
		}
	}
	tick := time.NewTicker(*interval)
loop:
	for {
		select {
		case <-stop:
			break loop
		case <-tick.C:
			sample()
		}
	}
	sample()

	var relays, recorders int
	var maxRelay, maxRec, maxInst, maxCLI int64
	for _, p := range procs {
		if p.cli {
			if p.hwm > maxCLI {
				maxCLI = p.hwm
			}
			continue
		}
		if p.recorder {
			recorders++
			if p.hwm > maxRec {
				maxRec = p.hwm
			}
			continue
		}
		relays++
		if p.hwm > maxRelay {
			maxRelay = p.hwm
		}
		inst := p.hwm
		for _, c := range procs {
			if c.recorder && p.pipes[c.pipe] {
				inst += c.hwm
			}
		}
		if inst > maxInst {
			maxInst = inst
		}
	}
	var maxOther int64
	for _, h := range others {
		if h > maxOther {
			maxOther = h
		}
	}
	w := io.Writer(os.Stdout)
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			die("rss: %v", err)
		}
		defer f.Close()
		w = f
	}
	mib := func(kb int64) float64 { return float64(kb) / 1024 }
	fmt.Fprintf(w, "rss relays=%d recorders=%d relay_peak_mib=%.1f recorder_peak_mib=%.1f instance_peak_mib=%.1f all_at_once_peak_mib=%.1f run_peak_mib=%.1f provider_procs=%d provider_peak_mib=%.1f\n",
		relays, recorders, mib(maxRelay), mib(maxRec), mib(maxInst), mib(peakSum), mib(maxCLI), len(others), mib(maxOther))
}

// ---- cpu: wall and CPU time of a command and everything it starts --------------

func cmdCPU(args []string) {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		die("cpu: no command")
	}
	// Orphaned descendants (double-forked recorders) become our children,
	// so their CPU time can be collected when they exit.
	const prSetChildSubreaper = 36
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		die("cpu: prctl: %v", e)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		die("cpu: %v", err)
	}
	err := cmd.Wait()
	wall := time.Since(t0)
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			die("cpu: %v", err)
		}
		code = ee.ExitCode()
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	// The command's rusage covers it and every descendant it waited for.
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	user, sys := tv(ru.Utime), tv(ru.Stime)
	orphans := 0
	for {
		var ws syscall.WaitStatus
		var oru syscall.Rusage
		pid, err := syscall.Wait4(-1, &ws, 0, &oru)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			break
		}
		orphans++
		user += tv(oru.Utime)
		sys += tv(oru.Stime)
	}
	fmt.Fprintf(os.Stderr, "relaybench-cpu wall=%.3f drained=%.3f user=%.3f sys=%.3f orphans=%d exit=%d\n",
		wall.Seconds(), time.Since(t0).Seconds(), user, sys, orphans, code)
	os.Exit(code)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: relaybench unary|rss [flags]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "unary":
		cmdUnary(os.Args[2:])
	case "rss":
		cmdRSS(os.Args[2:])
	case "cpu":
		cmdCPU(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, "relaybench: unknown command", os.Args[1])
		os.Exit(2)
	}
}
