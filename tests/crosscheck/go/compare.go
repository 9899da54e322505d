package main

// Semantic comparison of two decoded-value JSON documents, guided by the
// cty type: numbers compared exactly as decimals, object keys unordered,
// set elements as multisets, dynamic positions by their embedded type.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/text/unicode/norm"

	"tftap/crosscheck/render"
)

type nodeKind byte

const (
	kNull nodeKind = iota
	kBool
	kNum
	kStr
	kArr
	kObj
)

// node is a parsed JSON value that keeps object key order and duplicates.
type node struct {
	kind nodeKind
	b    bool
	s    string // number text or string value
	arr  []*node
	keys []string
	vals []*node
}

func parseJSON(data []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := parseNode(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return n, nil
}

func parseNode(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return &node{kind: kNull}, nil
	case bool:
		return &node{kind: kBool, b: t}, nil
	case json.Number:
		return &node{kind: kNum, s: string(t)}, nil
	case string:
		return &node{kind: kStr, s: t}, nil
	case json.Delim:
		switch t {
		case '[':
			n := &node{kind: kArr}
			for dec.More() {
				e, err := parseNode(dec)
				if err != nil {
					return nil, err
				}
				n.arr = append(n.arr, e)
			}
			_, err := dec.Token()
			return n, err
		case '{':
			n := &node{kind: kObj}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := parseNode(dec)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, kt.(string))
				n.vals = append(n.vals, v)
			}
			_, err := dec.Token()
			return n, err
		}
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

func (n *node) get(k string) *node {
	// Last occurrence wins, like go-cty's map decoding.
	for i := len(n.keys) - 1; i >= 0; i-- {
		if n.keys[i] == k {
			return n.vals[i]
		}
	}
	return nil
}

func (n *node) dupKey() (string, bool) {
	seen := make(map[string]bool, len(n.keys))
	for _, k := range n.keys {
		if seen[k] {
			return k, true
		}
		seen[k] = true
	}
	return "", false
}

// canonDecimal reduces a JSON number to sign, significant digits and
// exponent, so that equal values compare equal as strings without ever
// expanding large exponents.
func canonDecimal(s string) (string, bool) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	mant, exp := s, "0"
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i+1:]
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	if intPart == "" || !allDigits(intPart) || !allDigits(frac) {
		return "", false
	}
	e, ok := new(big.Int).SetString(strings.TrimPrefix(exp, "+"), 10)
	if !ok {
		return "", false
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	e.Sub(e, big.NewInt(int64(len(frac))))
	trimmed := strings.TrimRight(digits, "0")
	e.Add(e, big.NewInt(int64(len(digits)-len(trimmed))))
	if trimmed == "" {
		return "0", true
	}
	sign := ""
	if neg {
		sign = "-"
	}
	return sign + trimmed + "e" + e.String(), true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// cmpOpts: lenient is used for mutated payloads, where go-cty normalises
// what it decodes (NFC strings, deduplicated sets, last map key wins,
// refinements folded into the value) and the wire-faithful rendering of
// tftap may legitimately differ in those ways only.
type cmpOpts struct {
	lenient bool
}

func (o cmpOpts) str(s string) string {
	if o.lenient {
		return norm.NFC.String(s)
	}
	return s
}

func isUnknown(n *node) bool {
	return n != nil && n.kind == kObj && len(n.keys) == 1 && n.keys[0] == "$unknown"
}

// compare returns "" when act matches exp for type ty, else a description
// of the first difference found, prefixed with its path.
func compare(exp, act *node, ty cty.Type, path string, o cmpOpts) string {
	// A map or object whose only key is "$unknown" looks just like an
	// unknown value: read the pair either way.
	ambiguous := (ty.IsMapType() || ty.IsObjectType()) && exp.kind == kObj && len(exp.keys) == 1 &&
		exp.keys[0] == "$unknown" && !(ty.IsObjectType() && !ty.HasAttribute("$unknown"))
	if ambiguous && isUnknown(act) {
		if compareRefinements(exp.vals[0], act.vals[0], path, o) == "" {
			return ""
		}
	} else if isUnknown(exp) || isUnknown(act) {
		if isUnknown(exp) && isUnknown(act) {
			if ty == cty.DynamicPseudoType && o.lenient {
				return "" // go-cty drops refinements of dynamic unknowns
			}
			return compareRefinements(exp.vals[0], act.vals[0], path, o)
		}
		if o.lenient && isUnknown(act) && collapsible(act.vals[0], exp) {
			return ""
		}
		return fmt.Sprintf("%s: expected %s, got %s", path, brief(exp), brief(act))
	}
	if exp.kind == kNull || act.kind == kNull {
		if exp.kind == act.kind {
			return ""
		}
		// A bare nil where a dynamic value goes (a wrapper's bytes
		// deleted): go-cty gives the null the type its set or list
		// unifies to, tftap shows the null the wire holds.
		if o.lenient && ty == cty.DynamicPseudoType && act.kind == kNull && exp.kind == kObj &&
			exp.get("value") != nil && exp.get("value").kind == kNull {
			return ""
		}
		return fmt.Sprintf("%s: expected %s, got %s", path, brief(exp), brief(act))
	}
	switch {
	case ty == cty.DynamicPseudoType:
		if exp.kind != kObj || act.kind != kObj {
			return fmt.Sprintf("%s: dynamic value: expected %s, got %s", path, brief(exp), brief(act))
		}
		if d := keySet(act, []string{"type", "value"}); d != "" {
			return fmt.Sprintf("%s: dynamic wrapper: %s", path, d)
		}
		et, err1 := typeOf(exp.get("type"))
		at, err2 := typeOf(act.get("type"))
		// go-cty reads a wrapper whose type is "dynamic" as the value
		// inside it; tftap shows both wrappers.
		for o.lenient && err2 == nil && at == cty.DynamicPseudoType && act.get("value") != nil &&
			act.get("value").kind == kObj && !isUnknown(act.get("value")) {
			act = act.get("value")
			at, err2 = typeOf(act.get("type"))
		}
		if err1 != nil || err2 != nil {
			return fmt.Sprintf("%s: dynamic type unreadable: expected %v, got %v", path, err1, err2)
		}
		if !et.Equals(at) {
			return fmt.Sprintf("%s: dynamic type: expected %s, got %s", path, et.GoString(), at.GoString())
		}
		return compare(exp.get("value"), act.get("value"), et, path, o)
	case ty == cty.String:
		if act.kind != kStr || o.str(exp.s) != o.str(act.s) {
			return fmt.Sprintf("%s: expected string %s, got %s", path, brief(exp), brief(act))
		}
	case ty == cty.Bool:
		if act.kind != kBool || exp.b != act.b {
			return fmt.Sprintf("%s: expected %s, got %s", path, brief(exp), brief(act))
		}
	case ty == cty.Number:
		if !numEqual(exp, act) && !(o.lenient && numClose(exp, act)) {
			return fmt.Sprintf("%s: expected number %s, got %s", path, brief(exp), brief(act))
		}
	case ty.IsListType() || ty.IsTupleType():
		if act.kind != kArr || len(exp.arr) != len(act.arr) {
			return fmt.Sprintf("%s: expected %s, got %s", path, brief(exp), brief(act))
		}
		for i := range exp.arr {
			ety := cty.DynamicPseudoType
			if ty.IsListType() {
				ety = ty.ElementType()
			} else {
				ety = ty.TupleElementTypes()[i]
			}
			if d := compare(exp.arr[i], act.arr[i], ety, fmt.Sprintf("%s[%d]", path, i), o); d != "" {
				return d
			}
		}
	case ty.IsSetType():
		if act.kind != kArr {
			return fmt.Sprintf("%s: expected set %s, got %s", path, brief(exp), brief(act))
		}
		ety := ty.ElementType()
		ec := canonList(exp.arr, ety, o)
		ac := canonList(act.arr, ety, o)
		if strings.Join(ec, "\x00") != strings.Join(ac, "\x00") {
			return fmt.Sprintf("%s: set elements differ: expected %d elements %s, got %d elements %s",
				path, len(exp.arr), brief(exp), len(act.arr), brief(act))
		}
	case ty.IsMapType() || ty.IsObjectType():
		if act.kind != kObj {
			return fmt.Sprintf("%s: expected %s, got %s", path, brief(exp), brief(act))
		}
		if k, dup := act.dupKey(); dup && !o.lenient {
			return fmt.Sprintf("%s: duplicate key %q in output", path, k)
		}
		if d := keySet(act, exp.keys); d != "" {
			return fmt.Sprintf("%s: %s", path, d)
		}
		for i, k := range exp.keys {
			ety := cty.DynamicPseudoType
			if ty.IsMapType() {
				ety = ty.ElementType()
			} else if ty.HasAttribute(k) {
				ety = ty.AttributeType(k)
			} else {
				return fmt.Sprintf("%s: expected output has unknown attribute %q", path, k)
			}
			sub := fmt.Sprintf("%s[%q]", path, k)
			if ty.IsObjectType() {
				sub = path + "." + k
			}
			if d := compare(exp.vals[i], act.get(k), ety, sub, o); d != "" {
				return d
			}
		}
	default:
		return fmt.Sprintf("%s: unsupported type %s", path, ty.GoString())
	}
	return ""
}

// keySet compares the distinct keys of n with want.
func keySet(n *node, want []string) string {
	have := map[string]bool{}
	for _, k := range n.keys {
		have[k] = true
	}
	wantSet := map[string]bool{}
	for _, k := range want {
		wantSet[k] = true
		if !have[k] {
			return fmt.Sprintf("missing key %q", k)
		}
	}
	for k := range have {
		if !wantSet[k] {
			return fmt.Sprintf("unexpected key %q", k)
		}
	}
	return ""
}

func typeOf(n *node) (cty.Type, error) {
	if n == nil {
		return cty.NilType, fmt.Errorf("no type")
	}
	var t cty.Type
	err := t.UnmarshalJSON(jsonOf(nil, n))
	return t, err
}

// jsonOf serializes n back to JSON.
func jsonOf(dst []byte, n *node) []byte {
	switch n.kind {
	case kNull:
		return append(dst, "null"...)
	case kBool:
		return strconv.AppendBool(dst, n.b)
	case kNum:
		return append(dst, n.s...)
	case kStr:
		return render.String(dst, n.s)
	case kArr:
		dst = append(dst, '[')
		for i, e := range n.arr {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonOf(dst, e)
		}
		return append(dst, ']')
	default:
		dst = append(dst, '{')
		for i, k := range n.keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = render.String(dst, k)
			dst = append(dst, ':')
			dst = jsonOf(dst, n.vals[i])
		}
		return append(dst, '}')
	}
}

func numEqual(exp, act *node) bool {
	if exp.kind == kStr || act.kind == kStr { // "Infinity" / "-Infinity"
		return exp.kind == act.kind && exp.s == act.s
	}
	if exp.kind != kNum || act.kind != kNum {
		return false
	}
	a, ok1 := canonDecimal(exp.s)
	b, ok2 := canonDecimal(act.s)
	return ok1 && ok2 && a == b
}

// numClose: equal at go-cty's 512-bit precision. go-cty parses decimal
// strings into 512-bit floats, so digits past that are lost on its side
// (a damaged digit 200 places in, say) but kept verbatim by tftap.
func numClose(exp, act *node) bool {
	if exp.kind != kNum || act.kind != kNum {
		return false
	}
	a, b := parse512(exp.s), parse512(act.s)
	return a != nil && b != nil && a.Cmp(b) == 0
}

// parse512 reads a JSON number as go-cty does; nil for one that is not a
// number or whose exponent is too large to expand cheaply.
func parse512(s string) *big.Float {
	if c, ok := canonDecimal(s); !ok || len(c) > 2000 || strings.Contains(c, "e") &&
		len(c[strings.LastIndexByte(c, 'e')+1:]) > 4 {
		return nil
	}
	f, _, err := big.ParseFloat(s, 10, 512, big.ToNearestEven)
	if err != nil {
		return nil
	}
	return f
}

// normalize rewrites a document for lenient comparison the way go-cty
// normalises what it decodes: strings and keys in NFC, the last of
// duplicate keys kept, and refined unknowns that go-cty turns into known
// values (definitely null; not null with equal inclusive number bounds)
// replaced by those values.
func normalize(n *node) *node {
	if n == nil {
		return nil
	}
	switch n.kind {
	case kStr:
		return &node{kind: kStr, s: norm.NFC.String(n.s)}
	case kArr:
		out := &node{kind: kArr, arr: make([]*node, len(n.arr))}
		for i, e := range n.arr {
			out.arr[i] = normalize(e)
		}
		return out
	case kObj:
		if isUnknown(n) && n.vals[0].kind == kObj {
			rf := n.vals[0]
			if nl := rf.get("null"); nl != nil && nl.kind == kBool {
				if nl.b {
					return &node{kind: kNull}
				}
				lo, hi := rf.get("lower"), rf.get("upper")
				if lo != nil && hi != nil && lo.kind == kArr && hi.kind == kArr && len(lo.arr) == 2 &&
					len(hi.arr) == 2 && lo.arr[1].kind == kBool && lo.arr[1].b && hi.arr[1].kind == kBool &&
					hi.arr[1].b && numEqual(lo.arr[0], hi.arr[0]) {
					return lo.arr[0]
				}
			}
			return &node{kind: kObj, keys: n.keys, vals: []*node{dropDefaults(rf, cmpOpts{lenient: true})}}
		}
		out := &node{kind: kObj}
		at := map[string]int{}
		for i, k := range n.keys {
			k = norm.NFC.String(k)
			v := normalize(n.vals[i])
			if j, dup := at[k]; dup {
				out.vals[j] = v
				continue
			}
			at[k] = len(out.keys)
			out.keys = append(out.keys, k)
			out.vals = append(out.vals, v)
		}
		return out
	}
	return n
}

// hugeExponent reports a number in n whose decimal exponent is beyond
// what go-cty's 512-bit floats hold (it rejects such numbers or reads
// them as infinities).
func hugeExponent(n *node) bool {
	if n == nil {
		return false
	}
	switch n.kind {
	case kNum:
		// The exponent as written counts too: go-cty refuses
		// "0e0000000000249776438975006053219936869745154" although it is 0.
		if i := strings.IndexAny(n.s, "eE"); i >= 0 {
			raw := strings.TrimLeft(strings.TrimLeft(n.s[i+1:], "+-"), "0")
			if len(raw) >= 9 {
				return true
			}
		}
		c, ok := canonDecimal(n.s)
		if !ok {
			return false
		}
		i := strings.LastIndexByte(c, 'e')
		return i >= 0 && len(strings.TrimPrefix(c[i+1:], "-")) >= 9
	case kArr:
		for _, e := range n.arr {
			if hugeExponent(e) {
				return true
			}
		}
	case kObj:
		for _, e := range n.vals {
			if hugeExponent(e) {
				return true
			}
		}
	}
	return false
}

// compareRefinements compares two refinement objects; numbers exactly.
func compareRefinements(exp, act *node, path string, o cmpOpts) string {
	if exp.kind != kObj || act.kind != kObj {
		return fmt.Sprintf("%s: refinements: expected %s, got %s", path, brief(exp), brief(act))
	}
	e := canon(exp, cty.DynamicPseudoType, o, true)
	a := canon(dropDefaults(act, o), cty.DynamicPseudoType, o, true)
	if e != a {
		return fmt.Sprintf("%s: refinements: expected %s, got %s", path, e, a)
	}
	return ""
}

// dropDefaults removes, in lenient mode, minimum lengths of zero or less
// and empty prefixes, which go-cty does not keep (tftap shows them as they
// are on the wire).
func dropDefaults(n *node, o cmpOpts) *node {
	if !o.lenient {
		return n
	}
	out := &node{kind: kObj}
	for i, k := range n.keys {
		v := n.vals[i]
		if k == "min_len" && v.kind == kNum && (v.s == "0" || strings.HasPrefix(v.s, "-")) ||
			k == "prefix" && v.kind == kStr && v.s == "" {
			continue
		}
		out.keys = append(out.keys, k)
		out.vals = append(out.vals, v)
	}
	return out
}

// collapsible: go-cty turns a refined unknown into a known value when the
// refinements leave one possibility (definitely null; not null with equal
// inclusive number bounds; not null with equal length bounds).
func collapsible(rf, exp *node) bool {
	if rf.kind != kObj {
		return false
	}
	if nl := rf.get("null"); nl != nil && nl.kind == kBool {
		if nl.b {
			return exp.kind == kNull
		}
		lo, hi := rf.get("lower"), rf.get("upper")
		if lo != nil && hi != nil && lo.kind == kArr && hi.kind == kArr && len(lo.arr) == 2 && len(hi.arr) == 2 &&
			numEqual(lo.arr[0], hi.arr[0]) {
			return exp.kind == kNum
		}
		ml, xl := rf.get("min_len"), rf.get("max_len")
		if ml == nil {
			ml = &node{kind: kNum, s: "0"}
		}
		if xl != nil && numEqual(ml, xl) {
			return exp.kind == kArr || exp.kind == kObj
		}
	}
	return false
}

// canon renders n in a canonical form: numbers reduced, object keys sorted,
// set elements sorted, dynamic values by their type. generic ignores types
// (for type JSON and refinements).
func canon(n *node, ty cty.Type, o cmpOpts, generic bool) string {
	var b strings.Builder
	canonInto(&b, n, ty, o, generic)
	return b.String()
}

func canonList(arr []*node, ety cty.Type, o cmpOpts) []string {
	out := make([]string, 0, len(arr))
	seen := map[string]bool{}
	for _, e := range arr {
		c := canon(e, ety, o, false)
		if o.lenient && seen[c] {
			continue
		}
		seen[c] = true
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

func canonInto(b *strings.Builder, n *node, ty cty.Type, o cmpOpts, generic bool) {
	if n == nil {
		b.WriteString("<missing>")
		return
	}
	switch n.kind {
	case kNull:
		b.WriteString("null")
	case kBool:
		b.WriteString(strconv.FormatBool(n.b))
	case kNum:
		if o.lenient {
			if f := parse512(n.s); f != nil {
				n = &node{kind: kNum, s: f.Text('g', -1)}
			}
		}
		if c, ok := canonDecimal(n.s); ok {
			b.WriteString("n:" + c)
		} else {
			b.WriteString("badnum:" + n.s)
		}
	case kStr:
		b.WriteString(strconv.Quote(o.str(n.s)))
	case kArr:
		if !generic && ty.IsSetType() {
			b.WriteString("set[" + strings.Join(canonList(n.arr, ty.ElementType(), o), ",") + "]")
			return
		}
		b.WriteByte('[')
		for i, e := range n.arr {
			if i > 0 {
				b.WriteByte(',')
			}
			ety, sub := cty.DynamicPseudoType, generic
			if !generic {
				switch {
				case ty.IsListType():
					ety = ty.ElementType()
				case ty.IsTupleType() && i < len(ty.TupleElementTypes()):
					ety = ty.TupleElementTypes()[i]
				default:
					sub = true
				}
			}
			canonInto(b, e, ety, o, sub)
		}
		b.WriteByte(']')
	case kObj:
		if !generic && ty == cty.DynamicPseudoType && !isUnknown(n) {
			// As in compare: lenient, a typed null where a dynamic value
			// goes is the bare null tftap may show.
			if v := n.get("value"); o.lenient && v != nil && v.kind == kNull {
				b.WriteString("null")
				return
			}
			if t, err := typeOf(n.get("type")); err == nil {
				b.WriteString("dyn<" + t.GoString() + ">")
				canonInto(b, n.get("value"), t, o, false)
				return
			}
		}
		idx := make([]int, 0, len(n.keys))
		last := map[string]int{}
		for i, k := range n.keys {
			if _, dup := last[k]; !dup {
				idx = append(idx, i)
			}
			last[k] = i
		}
		sort.Slice(idx, func(x, y int) bool { return n.keys[idx[x]] < n.keys[idx[y]] })
		b.WriteByte('{')
		for j, i := range idx {
			k := n.keys[i]
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(o.str(k)) + ":")
			ety := cty.DynamicPseudoType
			sub := generic || isUnknown(n)
			if !sub {
				switch {
				case ty.IsMapType():
					ety = ty.ElementType()
				case ty.IsObjectType() && ty.HasAttribute(k):
					ety = ty.AttributeType(k)
				default:
					sub = true
				}
			}
			canonInto(b, n.vals[last[k]], ety, o, sub)
		}
		b.WriteByte('}')
	}
}

func brief(n *node) string {
	if n == nil {
		return "<missing>"
	}
	s := canon(n, cty.DynamicPseudoType, cmpOpts{}, true)
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}
