// crosscheck compares tftap's DynamicValue decoder with go-cty, the
// reference implementation of the encodings.
//
// For a seed and a count it draws random cty types and values, encodes each
// with go-cty (msgpack, and JSON for wholly known values), decodes the bytes
// again with go-cty's msgpack.Unmarshal and renders that value as tftap's
// decoded-value JSON. The same bytes go to decode_batch (the C decoder) and
// the two results are compared semantically. Each case also yields a damaged
// payload, which tftap must reject, or accept only with go-cty's value.
//
// Usage: crosscheck -driver PATH [-seed N] [-count N] [-case I] [-wrap CMD]
// Ends with "crosscheck: N passed, N failed"; exit 1 on any failure.
package main

import (
	"bufio"
	"bytes"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	ctymsgpack "github.com/zclconf/go-cty/cty/msgpack"
)

type tcase struct {
	index      int    // which random draw (reproduce with -case)
	label      string // "msgpack", "json", "mutated msgpack (bitflip)", ...
	kind       byte   // 'm' or 'j'
	ty         cty.Type
	tyJSON     []byte
	val        cty.Value // the generated value (for reports)
	payload    []byte
	negative   bool
	mustReject bool // tftap has to refuse it, whatever go-cty makes of it
	ref        refVerdict
}

type result struct {
	OK    bool   `json:"ok"`
	UTF8  *bool  `json:"utf8"`
	JSON  string `json:"json"`
	Code  int    `json:"code"`
	Error string `json:"error"`
	crash string // set when the driver died or hung on this case
}

func main() {
	driver := flag.String("driver", "", "path to the decode_batch program (required)")
	seed := flag.Uint64("seed", 0, "random seed (0: pick one)")
	count := flag.Int("count", 25000, "number of random values to draw")
	only := flag.Int("case", -1, "run only this draw index (with -seed) and show it")
	wrap := flag.String("wrap", "", "command prefix for the driver, e.g. \"valgrind -q --error-exitcode=99\"")
	timeout := flag.Duration("timeout", 60*time.Second, "longest wait for one result")
	maxShown := flag.Int("show", 20, "failures reported in full")
	verbose := flag.Bool("v", false, "report every case, passed or not")
	maxTolerated := flag.Float64("max-tolerated", 2, "tolerated differences allowed, in percent of the negative cases (more fail the run)")
	flag.Parse()
	if *driver == "" {
		fmt.Fprintln(os.Stderr, "crosscheck: -driver is required")
		os.Exit(2)
	}
	if *seed == 0 {
		var b [8]byte
		if _, err := crand.Read(b[:]); err != nil {
			fmt.Fprintln(os.Stderr, "crosscheck:", err)
			os.Exit(2)
		}
		*seed = binary.LittleEndian.Uint64(b[:])>>1 | 1
	}
	fmt.Printf("crosscheck: seed=%d count=%d (reproduce: -seed %d)\n", *seed, *count, *seed)

	argv := append(strings.Fields(*wrap), *driver)
	d := &driverProc{argv: argv, timeout: *timeout}
	defer d.stop()
	st := &stats{maxShown: *maxShown, seed: *seed, tolerated: map[string]int{}, labels: map[string]int{}}
	start := time.Now()

	first, last := 0, *count
	if *only >= 0 {
		first, last = *only, *only+1
	}
	st.verbose = *only >= 0 || *verbose
	if *only < 0 { // the hand-made payloads first
		fixed := fixedTestCases()
		results := d.run(fixed)
		for i, c := range fixed {
			st.check(c, results[i])
		}
	}
	const batch = 500
	for lo := first; lo < last; lo += batch {
		hi := min(lo+batch, last)
		var cases []*tcase
		for i := lo; i < hi; i++ {
			cases = append(cases, st.draw(*seed, i)...)
		}
		results := d.run(cases)
		for i, c := range cases {
			st.check(c, results[i])
		}
	}

	fmt.Printf("crosscheck: %d draws in %.1fs; go-cty could not encode %d of them\n",
		last-first, time.Since(start).Seconds(), st.genSkipped)
	labels := make([]string, 0, len(st.labels))
	for l := range st.labels {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	for _, l := range labels {
		fmt.Printf("  %-34s %d\n", l, st.labels[l])
	}
	fmt.Printf("  negative cases: %d rejected by tftap, %d accepted with go-cty's value, %d tolerated differences\n",
		st.negRejected, st.negSame, st.negTolerated)
	for k, n := range st.tolerated {
		fmt.Printf("    tolerated: %s: %d\n", k, n)
	}
	// The driver must also end cleanly (sanitizer leak reports show here).
	if msg := d.finish(); msg != "" {
		fmt.Println("--- decode_batch did not end cleanly:", msg)
		st.failed++
	} else {
		st.passed++
	}
	// Tolerated differences are accepted one by one, but not without
	// bound: a surge of them is a change in tftap or go-cty to look at.
	negatives := st.negRejected + st.negSame + st.negTolerated
	limit := int(math.Ceil(float64(negatives) * *maxTolerated / 100))
	if st.negTolerated > limit {
		fmt.Printf("--- %d tolerated differences, more than %.1f%% of %d negative cases (%d)\n",
			st.negTolerated, *maxTolerated, negatives, limit)
		st.failed++
	}
	fmt.Printf("crosscheck: %d passed, %d failed, %d tolerated (at most %d)\n",
		st.passed, st.failed, st.negTolerated, limit)
	if st.failed > 0 {
		d.stop()
		os.Exit(1)
	}
}

// ---- drawing cases ------------------------------------------------------

type stats struct {
	seed                               uint64
	maxShown                           int
	verbose                            bool
	passed, failed, genSkipped         int
	negRejected, negSame, negTolerated int
	tolerated                          map[string]int
	labels                             map[string]int
}

// draw makes the cases of draw i: the value as msgpack, as JSON when go-cty
// can write it, and damaged copies.
func (st *stats) draw(seed uint64, i int) []*tcase {
	// go-cty cannot decode every value it encodes: in a collection whose
	// element type has dynamic positions, a null or unknown element decodes
	// with a type that differs from its siblings' and go-cty panics. Such
	// draws are redrawn (deterministically) a few times before giving up.
	var g *gen
	var ty cty.Type
	var v cty.Value
	var mp []byte
	var ref refVerdict
	why := ""
	for attempt := uint64(0); attempt < 8; attempt++ {
		g = &gen{r: rand.New(rand.NewPCG(seed, uint64(i)<<8|attempt))}
		var err error
		if ty, v, err = g.safeTestCase(); err != nil {
			why = "generator: " + err.Error()
			continue
		}
		if mp, err = ctymsgpack.Marshal(v, ty); err != nil {
			why = "go-cty cannot encode: " + err.Error()
			continue
		}
		if ref = refDecode('m', mp, ty); !ref.ok {
			why = "go-cty does not decode its own msgpack: " + ref.reason
			continue
		}
		why = ""
		break
	}
	if why != "" {
		fmt.Printf("crosscheck: draw %d skipped: %s\n", i, clip(why, 300))
		st.genSkipped++
		return nil
	}
	tj, err := ty.MarshalJSON()
	if err != nil {
		st.genSkipped++
		return nil
	}
	base := tcase{index: i, ty: ty, tyJSON: tj, val: v}
	var out []*tcase
	add := func(label string, kind byte, p []byte, neg bool, ref refVerdict) {
		c := base
		c.label, c.kind, c.payload, c.negative, c.ref = label, kind, p, neg, ref
		out = append(out, &c)
	}
	add("msgpack", 'm', mp, false, ref)
	if v.IsWhollyKnown() {
		if js, err := ctyjson.Marshal(v, ty); err == nil {
			// Expected from go-cty's reading of the JSON text: the text may
			// not denote the msgpack value exactly (go-cty writes float64
			// integers beyond 2^53 in shortest form, e.g. ...410 for ...408).
			jref := refDecode('j', js, ty)
			if !jref.ok {
				fmt.Printf("crosscheck: draw %d: go-cty does not round-trip its own JSON (%s)\n", i, jref.reason)
			} else {
				add("json", 'j', js, false, jref)
			}
			if g.chance(0.3) {
				bad, how := g.mutateJSON(js)
				add("mutated json ("+how+")", 'j', bad, true, refDecodeDamaged('j', bad, ty))
			}
		}
	}
	bad, how := g.mutateMsgpack(mp)
	add("mutated msgpack ("+how+")", 'm', bad, true, refDecodeDamaged('m', bad, ty))
	return out
}

func (st *stats) check(c *tcase, r result) {
	if c.index < 0 {
		st.labels["fixed (hand-made payloads)"]++
	} else {
		st.labels[c.label]++
	}
	fail := func(format string, a ...any) {
		st.failed++
		if st.failed <= st.maxShown || st.verbose {
			st.report(c, r, fmt.Sprintf(format, a...))
		} else {
			fmt.Printf("--- %s, draw %d: %s (details: -seed %d -case %d)\n", c.label, c.index,
				clip(fmt.Sprintf(format, a...), 200), st.seed, c.index)
		}
	}
	if r.crash != "" {
		fail("decoder process failed: %s", r.crash)
		return
	}
	if !r.OK {
		if c.negative {
			st.negRejected++
			st.passed++
			if st.verbose {
				st.report(c, r, "rejected")
			}
			return
		}
		fail("tftap rejected a payload go-cty encoded: %s", r.Error)
		return
	}
	if c.mustReject {
		fail("tftap accepted a payload it must reject")
		return
	}
	if r.UTF8 != nil && !*r.UTF8 {
		fail("tftap's output is not valid UTF-8")
		return
	}
	act, err := parseJSON([]byte(r.JSON))
	if err != nil {
		fail("tftap's output is not valid JSON: %v", err)
		return
	}
	tolerate := func(why string) {
		st.tolerated[why]++
		st.negTolerated++ // counted apart from passed, and capped
		if st.verbose {
			st.report(c, r, "tolerated: "+why)
		}
	}
	if c.negative && c.kind == 'm' && oddRefinementKeys(c.payload) {
		// go-cty does not skip refinement keys it does not know, so it
		// misreads the rest of the refinement map (or fails on it).
		tolerate("unknown refinement keys, which go-cty does not skip")
		return
	}
	if c.negative && hugeExponent(act) {
		tolerate("decimal exponent beyond go-cty's range")
		return
	}
	if c.negative && !c.ref.ok {
		if why := tolerated(c.ref.reason); why != "" {
			tolerate(why)
			return
		}
		fail("tftap accepted bytes go-cty rejects (%s)", c.ref.reason)
		return
	}
	exp, err := parseJSON(c.ref.json)
	if err != nil {
		fail("reference rendering is not valid JSON (crosscheck bug): %v", err)
		return
	}
	if c.negative {
		exp, act = normalize(exp), normalize(act)
	}
	if d := compare(exp, act, c.ty, "", cmpOpts{lenient: c.negative}); d != "" {
		fail("values differ: %s", d)
		return
	}
	if c.negative {
		st.negSame++
	}
	st.passed++
	if st.verbose {
		st.report(c, r, "ok")
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return s
}

func (st *stats) report(c *tcase, r result, why string) {
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s, draw %d: %s\n", c.label, c.index, why)
	if c.index >= 0 {
		fmt.Fprintf(&b, "  reproduce: crosscheck -driver DRIVER -seed %d -case %d\n", st.seed, c.index)
	}
	fmt.Fprintf(&b, "  type:      %s\n", clip(string(c.tyJSON), 2000))
	if c.index >= 0 {
		fmt.Fprintf(&b, "  value:     %s\n", clip(c.val.GoString(), 2000))
	}
	if c.kind == 'm' {
		fmt.Fprintf(&b, "  bytes:     %s\n", clip(hex.EncodeToString(c.payload), 4000))
	} else {
		fmt.Fprintf(&b, "  json:      %s\n", clip(string(c.payload), 4000))
	}
	if c.ref.ok {
		fmt.Fprintf(&b, "  go-cty:    %s\n", clip(string(c.ref.json), 4000))
	} else {
		fmt.Fprintf(&b, "  go-cty:    rejected: %s\n", c.ref.reason)
	}
	switch {
	case r.crash != "":
		fmt.Fprintf(&b, "  tftap:     %s\n", r.crash)
	case r.OK:
		fmt.Fprintf(&b, "  tftap:     %s\n", clip(r.JSON, 4000))
	default:
		fmt.Fprintf(&b, "  tftap:     error %d: %s\n", r.Code, r.Error)
	}
	fmt.Print(b.String())
}

// ---- the decode_batch process ----------------------------------------------

type driverProc struct {
	argv     []string
	timeout  time.Duration
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	lines    chan []byte
	stderr   *tailBuffer
	done     chan struct{}
	lastExit int
}

// tailBuffer keeps the last bytes written to it (the driver's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 8192 {
		t.buf = t.buf[len(t.buf)-8192:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

func (d *driverProc) start() error {
	d.cmd = exec.Command(d.argv[0], d.argv[1:]...)
	d.stderr = &tailBuffer{}
	d.cmd.Stderr = d.stderr
	var err error
	if d.stdin, err = d.cmd.StdinPipe(); err != nil {
		return err
	}
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := d.cmd.Start(); err != nil {
		return err
	}
	d.lines = make(chan []byte, 64)
	d.done = make(chan struct{})
	go func(lines chan<- []byte) {
		rd := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := rd.ReadBytes('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- line
		}
	}(d.lines)
	return nil
}

func (d *driverProc) stop() {
	if d.cmd == nil {
		return
	}
	d.stdin.Close()
	d.cmd.Process.Kill()
	d.cmd.Wait()
	d.cmd = nil
}

// finish closes the driver's input and waits for it to exit; "" when it
// exited with status 0.
func (d *driverProc) finish() string {
	if d.cmd == nil {
		return ""
	}
	msg := d.exitReport("exit")
	if d.lastExit == 0 {
		return ""
	}
	return msg
}

// exitReport stops the process and describes how it ended.
func (d *driverProc) exitReport(what string) string {
	d.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		d.cmd.Process.Kill()
		err = <-done
	}
	d.lastExit = d.cmd.ProcessState.ExitCode()
	d.cmd = nil
	msg := what
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		msg += ": " + ee.ProcessState.String()
	} else if err != nil {
		msg += ": " + err.Error()
	}
	if s := d.stderr.String(); s != "" {
		msg += "\n  stderr:    " + strings.ReplaceAll(clip(s, 4000), "\n", "\n             ")
	}
	return msg
}

func writeFrames(w io.Writer, cases []*tcase) {
	bw := bufio.NewWriterSize(w, 1<<20)
	var hdr [4]byte
	for _, c := range cases {
		bw.WriteByte(c.kind)
		binary.BigEndian.PutUint32(hdr[:], uint32(len(c.tyJSON)))
		bw.Write(hdr[:])
		bw.Write(c.tyJSON)
		binary.BigEndian.PutUint32(hdr[:], uint32(len(c.payload)))
		bw.Write(hdr[:])
		if _, err := bw.Write(c.payload); err != nil {
			return // the driver died; the reader reports it
		}
	}
	bw.Flush()
}

// run feeds cases to the driver and collects one result each. A case during
// which the driver dies or stalls gets a crash result; the cases after it go
// to a new driver process.
func (d *driverProc) run(cases []*tcase) []result {
	results := make([]result, len(cases))
	for i := 0; i < len(cases); {
		if d.cmd == nil {
			if err := d.start(); err != nil {
				fmt.Fprintln(os.Stderr, "crosscheck: cannot start the driver:", err)
				os.Exit(2)
			}
		}
		go writeFrames(d.stdin, cases[i:])
		i = d.collect(results, i)
	}
	return results
}

// collect reads results from index i on; it returns the index after the
// last case handled, having stopped the driver if it failed.
func (d *driverProc) collect(results []result, i int) int {
	for ; i < len(results); i++ {
		var line []byte
		var ok bool
		select {
		case line, ok = <-d.lines:
		case <-time.After(d.timeout):
			d.cmd.Process.Kill()
			results[i].crash = d.exitReport(fmt.Sprintf("no result within %s", d.timeout))
			return i + 1
		}
		if !ok {
			results[i].crash = d.exitReport("decode_batch exited")
			return i + 1
		}
		if err := json.Unmarshal(bytes.TrimSpace(line), &results[i]); err != nil {
			results[i] = result{crash: "unreadable result line: " + clip(string(line), 500)}
		}
	}
	return i
}
