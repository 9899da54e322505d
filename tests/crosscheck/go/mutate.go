package main

// Negative cases: payloads damaged at random, and the reference decoders'
// verdict on them.

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	ctymsgpack "github.com/zclconf/go-cty/cty/msgpack"

	"tftap/crosscheck/render"
)

// Bytes that start interesting msgpack items: nil, the never-used 0xc1,
// bools, ext headers, wide containers and strings, numbers.
var interesting = []byte{0xc0, 0xc1, 0xc2, 0xc3, 0xd4, 0xd5, 0xc7, 0xc8, 0xc9, 0xd8, 0xdc, 0xdd,
	0xde, 0xdf, 0xdb, 0xda, 0xd9, 0xc4, 0xc5, 0xc6, 0xca, 0xcb, 0xcc, 0xcf, 0xd0, 0xd3, 0x90, 0x80,
	0xa0, 0xbf, 0x9f, 0x8f, 0xff, 0xe0, 0x7f, 0x00, 0x0c}

// mutateMsgpack returns a damaged copy of b and a word for what was done.
func (g *gen) mutateMsgpack(b []byte) ([]byte, string) {
	out := append([]byte(nil), b...)
	pos := func() int {
		if len(out) == 0 {
			return 0
		}
		return g.intn(len(out))
	}
	switch g.intn(9) {
	case 0:
		return out[:g.intn(len(out)+1)], "truncate"
	case 1:
		if len(out) > 0 {
			out[pos()] ^= 1 << g.intn(8)
		}
		return out, "bitflip"
	case 2:
		if len(out) > 0 {
			out[pos()] = interesting[g.intn(len(interesting))]
		}
		return out, "interesting-byte"
	case 3:
		if len(out) > 0 {
			out[pos()] = byte(g.intn(256))
		}
		return out, "random-byte"
	case 4:
		for n := 1 + g.intn(4); n > 0; n-- {
			out = append(out, byte(g.intn(256)))
		}
		return out, "trailing"
	case 5:
		p := pos()
		ins := []byte{interesting[g.intn(len(interesting))], byte(g.intn(256))}
		return append(out[:p], append(ins, out[p:]...)...), "insert"
	case 6: // a container claiming far more items than there are bytes
		p := pos()
		hdr := []byte{0xdd, 0xff, 0xff, 0xff, 0xf0}
		if g.chance(0.5) {
			hdr[0] = 0xdf
		}
		return append(out[:p], append(hdr, out[p:]...)...), "huge-count"
	case 7:
		if len(out) > 1 {
			p := pos()
			q := p + 1 + g.intn(len(out)-p)
			if q > len(out) {
				q = len(out)
			}
			return append(out[:p], out[q:]...), "delete"
		}
		return out[:0], "delete"
	default: // an ext of another code or a bad refinement body in place of a byte
		p := pos()
		ext := []byte{0xd4, byte(g.intn(20)), 0}
		if g.chance(0.5) {
			body := []byte{0x81, byte(1 + g.intn(7)), interesting[g.intn(len(interesting))]}
			ext = append([]byte{0xc7, byte(len(body)), 0x0c}, body...)
		}
		if len(out) == 0 {
			return ext, "ext"
		}
		return append(out[:p], append(ext, out[p+1:]...)...), "ext"
	}
}

func (g *gen) mutateJSON(b []byte) ([]byte, string) {
	out := append([]byte(nil), b...)
	if len(out) == 0 || g.chance(0.5) {
		return out[:g.intn(len(out)+1)], "json-truncate"
	}
	chars := `{}[]",:0123456789.eE-+tfn \`
	out[g.intn(len(out))] = chars[g.intn(len(chars))]
	return out, "json-char"
}

// msgpackComplete reports whether b starts with one structurally complete
// msgpack item whose every length claim fits in the bytes present. go-cty's
// decoder allocates whatever a header claims before reading the items, so
// it is only asked about payloads that pass this test; ones that fail cannot
// be valid (the claimed items are not there).
func msgpackComplete(b []byte) bool {
	_, ok := skipItem(b, 0, 0)
	return ok
}

func skipItem(b []byte, i, depth int) (int, bool) {
	if i >= len(b) || depth > 10000 {
		return 0, false
	}
	c := b[i]
	i++
	need := func(n uint64) (int, bool) {
		if n > uint64(len(b)-i) {
			return 0, false
		}
		return i + int(n), true
	}
	u := func(w int) (uint64, bool) {
		if len(b)-i < w {
			return 0, false
		}
		var v uint64
		switch w {
		case 1:
			v = uint64(b[i])
		case 2:
			v = uint64(binary.BigEndian.Uint16(b[i:]))
		case 4:
			v = uint64(binary.BigEndian.Uint32(b[i:]))
		}
		i += w
		return v, true
	}
	items := func(n uint64) (int, bool) {
		if n > uint64(len(b)-i) {
			return 0, false
		}
		var ok bool
		for ; n > 0; n-- {
			if i, ok = skipItem(b, i, depth+1); !ok {
				return 0, false
			}
		}
		return i, true
	}
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		return i, true
	case c >= 0x80 && c <= 0x8f:
		return items(2 * uint64(c&0x0f))
	case c >= 0x90 && c <= 0x9f:
		return items(uint64(c & 0x0f))
	case c >= 0xa0 && c <= 0xbf:
		return need(uint64(c & 0x1f))
	}
	switch c {
	case 0xc4, 0xd9:
		n, ok := u(1)
		if !ok {
			return 0, false
		}
		return need(n)
	case 0xc5, 0xda:
		n, ok := u(2)
		if !ok {
			return 0, false
		}
		return need(n)
	case 0xc6, 0xdb:
		n, ok := u(4)
		if !ok {
			return 0, false
		}
		return need(n)
	case 0xc7, 0xc8, 0xc9:
		w := map[byte]int{0xc7: 1, 0xc8: 2, 0xc9: 4}[c]
		n, ok := u(w)
		if !ok {
			return 0, false
		}
		return need(n + 1)
	case 0xca:
		return need(4)
	case 0xcb:
		return need(8)
	case 0xcc, 0xd0:
		return need(1)
	case 0xcd, 0xd1:
		return need(2)
	case 0xce, 0xd2:
		return need(4)
	case 0xcf, 0xd3:
		return need(8)
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		return need(1 + (1 << (c - 0xd4)))
	case 0xdc:
		n, ok := u(2)
		if !ok {
			return 0, false
		}
		return items(n)
	case 0xdd:
		n, ok := u(4)
		if !ok {
			return 0, false
		}
		return items(n)
	case 0xde:
		n, ok := u(2)
		if !ok {
			return 0, false
		}
		return items(2 * n)
	case 0xdf:
		n, ok := u(4)
		if !ok {
			return 0, false
		}
		return items(2 * n)
	}
	return 0, false // 0xc1
}

// refVerdict is go-cty's view of a payload: the rendered value, or why it
// was not accepted.
type refVerdict struct {
	ok     bool
	json   []byte
	reason string
}

func safely(f func() (cty.Value, error)) (v cty.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return f()
}

// reasonHugeExponent is the verdict on damaged bytes not given to go-cty.
const reasonHugeExponent = "exponent of six or more digits, not given to go-cty"

// longExponent reports whether b holds what reads as an exponent of six or
// more significant digits, decimal (1e123456) or binary (7.8p1971199492:
// math/big reads a "p" exponent in base 10 too). go-cty decodes such a
// number, but hashing it into a set formats it in full: minutes of CPU and
// GBs of memory for one damaged payload (seen with seeds
// 1922033125273944459 and, binary, 2858057749264442379).
func longExponent(b []byte) bool {
	for i := 0; i+1 < len(b); i++ {
		if b[i] != 'e' && b[i] != 'E' && b[i] != 'p' && b[i] != 'P' {
			continue
		}
		j := i + 1
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		for j < len(b) && b[j] == '0' {
			j++
		}
		k := j
		for k < len(b) && b[k] >= '0' && b[k] <= '9' {
			k++
		}
		if k-j >= 6 {
			return true
		}
	}
	return false
}

// refDecodeDamaged is refDecode for bytes a mutation made, which may carry
// numbers go-cty takes minutes over.
func refDecodeDamaged(kind byte, payload []byte, ty cty.Type) refVerdict {
	if longExponent(payload) {
		return refVerdict{reason: reasonHugeExponent}
	}
	return refDecode(kind, payload, ty)
}

func refDecode(kind byte, payload []byte, ty cty.Type) refVerdict {
	if kind == 'm' && !msgpackComplete(payload) {
		return refVerdict{reason: "incomplete msgpack"}
	}
	v, err := safely(func() (cty.Value, error) {
		if kind == 'm' {
			return ctymsgpack.Unmarshal(payload, ty)
		}
		return ctyjson.Unmarshal(payload, ty)
	})
	if err != nil {
		return refVerdict{reason: err.Error()}
	}
	if errs := v.Type().TestConformance(ty); errs != nil {
		return refVerdict{reason: fmt.Sprintf("value of type %s does not conform", v.Type().GoString())}
	}
	var out []byte
	_, err = safely(func() (cty.Value, error) {
		var err error
		out, err = render.Value(nil, v, ty)
		return cty.NilVal, err
	})
	if err != nil {
		return refVerdict{reason: "render: " + err.Error()}
	}
	return refVerdict{ok: true, json: out}
}

// tolerated names the kinds of go-cty rejections where tftap's decoder is
// allowed to accept the bytes by design, or "" when accepting them is a bug.
func tolerated(reason string) string {
	switch {
	case strings.Contains(reason, "unsupported extension type"):
		return "other ext codes are plain unknowns"
	case strings.Contains(reason, "oversize unknown value refinement"):
		return "refinement payload over 1 KiB"
	case strings.Contains(reason, "refinement for non-"):
		return "refinement for another type"
	case strings.HasPrefix(reason, "panic:"):
		return "go-cty panicked"
	case strings.Contains(reason, render.ErrHugeNumber.Error()):
		return "number exponent too large to compare"
	case reason == reasonHugeExponent:
		return "exponent too large for go-cty to decode in time"
	}
	return ""
}

// oddRefinementKeys reports whether b holds a refinement payload (ext 12)
// whose map has a key other than the integers 1..6.
func oddRefinementKeys(b []byte) bool {
	for i := 0; i+3 <= len(b); i++ {
		var body []byte
		switch {
		case b[i] == 0xc7 && b[i+2] == 0x0c:
			if n := int(b[i+1]); i+3+n <= len(b) {
				body = b[i+3 : i+3+n]
			}
		case b[i] == 0xc8 && i+4 <= len(b) && b[i+3] == 0x0c:
			if n := int(binary.BigEndian.Uint16(b[i+1:])); i+4+n <= len(b) {
				body = b[i+4 : i+4+n]
			}
		case b[i] == 0xc9 && i+6 <= len(b) && b[i+5] == 0x0c:
			if n := uint64(binary.BigEndian.Uint32(b[i+1:])); uint64(i)+6+n <= uint64(len(b)) {
				body = b[i+6 : i+6+int(n)]
			}
		case b[i] >= 0xd5 && b[i] <= 0xd8 && b[i+1] == 0x0c:
			if n := 1 << (b[i] - 0xd4); i+2+n <= len(b) {
				body = b[i+2 : i+2+n]
			}
		}
		if len(body) < 2 || body[0] < 0x81 || body[0] > 0x8f {
			continue
		}
		j := 1
		for k := 0; k < int(body[0]&0x0f) && j < len(body); k++ {
			if key := body[j]; key < 1 || key > 6 {
				return true
			}
			next, ok := skipItem(body, j+1, 0)
			if !ok {
				break
			}
			j = next
		}
	}
	return false
}
