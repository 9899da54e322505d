// decodebench writes the decode benchmark's corpora and runs go-cty over
// them as the reference (bench/decode/run.sh runs it beside bench_decode).
//
//	decodebench gen -out DIR [-resources 10000] [-schema-mb 30] [-seed 1]
//	decodebench run [-repeat 5] FILE...
//
// A corpus file is a sequence of frames as tests/crosscheck/decode_batch
// reads them: 'm', u32 BE length + cty type JSON, u32 BE length + msgpack.
// run decodes every payload with msgpack.Unmarshal and writes it as JSON
// (ctyjson.Marshal when wholly known; otherwise the decoded-value contract,
// as go-cty's JSON has no form for unknowns), and prints per file:
//
//	result go-cty NAME BYTES PAYLOADS BEST_S MEDIAN_S
//	result go-cty-unmarshal NAME BYTES PAYLOADS BEST_S MEDIAN_S
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	ctymsgpack "github.com/zclconf/go-cty/cty/msgpack"

	"tftap/crosscheck/render"
)

type frame struct {
	typeJSON []byte
	payload  []byte
}

func mustFrame(ty cty.Type, v cty.Value) frame {
	tj, err := ty.MarshalJSON()
	if err != nil {
		panic(err)
	}
	b, err := ctymsgpack.Marshal(v, ty)
	if err != nil {
		panic(err)
	}
	return frame{tj, b}
}

func writeFrames(path string, frames []frame) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var hdr [4]byte
	for _, fr := range frames {
		w.WriteByte('m')
		binary.BigEndian.PutUint32(hdr[:], uint32(len(fr.typeJSON)))
		w.Write(hdr[:])
		w.Write(fr.typeJSON)
		binary.BigEndian.PutUint32(hdr[:], uint32(len(fr.payload)))
		w.Write(hdr[:])
		w.Write(fr.payload)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func readFrames(path string) ([]frame, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []frame
	field := func() ([]byte, error) {
		if len(data) < 4 {
			return nil, io.ErrUnexpectedEOF
		}
		n := binary.BigEndian.Uint32(data)
		if uint64(n) > uint64(len(data)-4) {
			return nil, io.ErrUnexpectedEOF
		}
		b := data[4 : 4+n]
		data = data[4+n:]
		return b, nil
	}
	for len(data) > 0 {
		if data[0] != 'm' {
			return nil, fmt.Errorf("%s: bad frame kind %q", path, data[0])
		}
		data = data[1:]
		tj, err := field()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		p, err := field()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, frame{tj, p})
	}
	return out, nil
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: decodebench gen|run ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "gen":
		err = gen(os.Args[2:])
	case "run":
		err = run(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "decodebench:", err)
		os.Exit(1)
	}
}

func gen(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	out := fs.String("out", "", "output directory")
	resources := fs.Int("resources", 10000, "planned states to write")
	schemaMB := fs.Int("schema-mb", 30, "approximate size of the large value")
	seed := fs.Uint64("seed", 1, "random seed")
	fs.Parse(args)
	if *out == "" {
		return fmt.Errorf("gen: -out is required")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	if err := writeFrames(filepath.Join(*out, "planned.frames"), plannedStates(*seed, *resources)); err != nil {
		return err
	}
	return writeFrames(filepath.Join(*out, "schema.frames"), []frame{schemaValue(*seed, *schemaMB<<20)})
}

type decoded struct {
	ty cty.Type
	p  []byte
}

func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	repeat := fs.Int("repeat", 5, "timed passes over each file")
	fs.Parse(args)
	for _, path := range fs.Args() {
		frames, err := readFrames(path)
		if err != nil {
			return err
		}
		// Types are parsed once, outside the timing, as tftap does per schema.
		types := map[string]cty.Type{}
		items := make([]decoded, len(frames))
		total := 0
		for i, f := range frames {
			ty, ok := types[string(f.typeJSON)]
			if !ok {
				if err := ty.UnmarshalJSON(f.typeJSON); err != nil {
					return fmt.Errorf("%s: frame %d: %w", path, i, err)
				}
				types[string(f.typeJSON)] = ty
			}
			items[i] = decoded{ty, f.payload}
			total += len(f.payload)
		}
		name := filepath.Base(path)
		var outBytes int
		full := func() error {
			outBytes = 0
			var buf []byte
			for _, it := range items {
				v, err := ctymsgpack.Unmarshal(it.p, it.ty)
				if err != nil {
					return err
				}
				var j []byte
				if v.IsWhollyKnown() {
					j, err = ctyjson.Marshal(v, it.ty)
				} else {
					buf, err = render.Value(buf[:0], v, it.ty)
					j = buf
				}
				if err != nil {
					return err
				}
				outBytes += len(j)
			}
			return nil
		}
		unmarshalOnly := func() error {
			for _, it := range items {
				if _, err := ctymsgpack.Unmarshal(it.p, it.ty); err != nil {
					return err
				}
			}
			return nil
		}
		for _, m := range []struct {
			label string
			f     func() error
		}{{"go-cty", full}, {"go-cty-unmarshal", unmarshalOnly}} {
			var times []float64
			for r := 0; r < *repeat; r++ {
				start := time.Now()
				if err := m.f(); err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				times = append(times, time.Since(start).Seconds())
			}
			sort.Float64s(times)
			fmt.Printf("result %s %s %d %d %.6f %.6f\n", m.label, name, total, len(items), times[0], times[len(times)/2])
		}
		fmt.Fprintf(os.Stderr, "decodebench: %s: %d payloads, %d bytes in, %d bytes of JSON out\n", name, len(items), total, outBytes)
	}
	return nil
}
