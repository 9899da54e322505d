package main

// Random cty types and values covering what providers and the CLI put on the
// wire: every type kind, dynamic positions, nulls and unknowns (plain and
// refined) at every level, numbers that need each msgpack encoding, awkward
// strings, empty, large and deeply nested values.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/zclconf/go-cty/cty"
)

type gen struct {
	r      *rand.Rand
	budget int // values left to generate in the current case
	// Inside a collection's element type no object gets optional
	// attributes: go-cty's decoder panics on such collections as soon as
	// one element is null or empty (its types then differ from the rest).
	inElem int
	inSet  int // generating set elements (see number)
}

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }
func (g *gen) intn(n int) int        { return g.r.IntN(n) }

// ---- types ------------------------------------------------------------

var attrNames = []string{
	"id", "name", "arn", "tags", "tags_all", "ami", "instance_type", "count", "enabled",
	"a", "b", "c", "x", "value", "type", "nested", "", "with space", "ünïcödé", "日本",
	`quote"d`, `back\slash`, "$unknown", "null", "dash-ed", "UPPER", "a.b", "emoji🎉",
}

func (g *gen) primitive() cty.Type {
	switch g.intn(3) {
	case 0:
		return cty.String
	case 1:
		return cty.Number
	}
	return cty.Bool
}

// typ returns a random type; allowDyn permits dynamic positions in it.
func (g *gen) typ(depth int, allowDyn bool) cty.Type {
	if depth <= 0 {
		if allowDyn && g.chance(0.1) {
			return cty.DynamicPseudoType
		}
		return g.primitive()
	}
	w := g.intn(100)
	switch {
	case w < 30:
		return g.primitive()
	case w < 38:
		if allowDyn {
			return cty.DynamicPseudoType
		}
		return g.primitive()
	case w < 50:
		return cty.List(g.elemType(depth-1, allowDyn))
	case w < 60:
		return cty.Set(g.elemType(depth-1, allowDyn))
	case w < 72:
		return cty.Map(g.elemType(depth-1, allowDyn))
	case w < 90:
		return g.object(depth, allowDyn)
	default:
		n := g.intn(5)
		etys := make([]cty.Type, n)
		for i := range etys {
			etys[i] = g.typ(depth-1, allowDyn)
		}
		return cty.Tuple(etys)
	}
}

func (g *gen) elemType(depth int, allowDyn bool) cty.Type {
	g.inElem++
	defer func() { g.inElem-- }()
	return g.typ(depth, allowDyn)
}

func (g *gen) object(depth int, allowDyn bool) cty.Type {
	n := g.intn(7)
	atys := make(map[string]cty.Type, n)
	var optional []string
	for i := 0; i < n; i++ {
		name := attrNames[g.intn(len(attrNames))]
		if _, dup := atys[name]; dup {
			continue
		}
		atys[name] = g.typ(depth-1, allowDyn)
		if g.inElem == 0 && g.chance(0.25) {
			optional = append(optional, name)
		}
	}
	if len(optional) > 0 {
		return cty.ObjectWithOptionalAttrs(atys, optional)
	}
	return cty.Object(atys)
}

// deepType builds a chain of nested containers `levels` deep.
func (g *gen) deepType(levels int) cty.Type {
	t := g.primitive()
	for i := 0; i < levels; i++ {
		switch g.intn(5) {
		case 0:
			t = cty.List(t)
		case 1:
			t = cty.Map(t)
		case 2:
			t = cty.Object(map[string]cty.Type{"n": t})
		case 3:
			t = cty.Tuple([]cty.Type{t})
		default:
			t = cty.Set(t)
		}
	}
	return t
}

// concrete replaces the dynamic positions of t with random concrete types,
// as a collection's elements must all have one type. A few stay dynamic;
// those may only hold null or wholly unknown values (see value).
func (g *gen) concrete(t cty.Type) cty.Type {
	switch {
	case t == cty.DynamicPseudoType:
		if g.chance(0.1) {
			return cty.DynamicPseudoType
		}
		// Through concrete again: values never have optional attributes,
		// so an empty collection's type must not either.
		return g.concrete(g.typ(g.intn(3), false))
	case t.IsListType():
		return cty.List(g.concrete(t.ElementType()))
	case t.IsSetType():
		return cty.Set(g.concrete(t.ElementType()))
	case t.IsMapType():
		return cty.Map(g.concrete(t.ElementType()))
	case t.IsTupleType():
		etys := t.TupleElementTypes()
		out := make([]cty.Type, len(etys))
		for i, e := range etys {
			out[i] = g.concrete(e)
		}
		return cty.Tuple(out)
	case t.IsObjectType():
		atys := t.AttributeTypes()
		out := make(map[string]cty.Type, len(atys))
		for k, a := range atys {
			out[k] = g.concrete(a)
		}
		return cty.Object(out)
	}
	return t
}

// ---- values -------------------------------------------------------------

var stringPool = []string{
	"", "a", "hello world", "ami-0abc1234def567890", "i-0123456789abcdef0",
	"\"quoted\" \\ back/slash", "\b\f\n\r\t", "\x00\x01\x1f\x7f", "\u2028\u2029",
	"héllo wörld", "日本語のテキスト", "🎉👍🏽👨‍👩‍👧", "e\u0301", "Ω≈ç√∫", "\ufeffbom", "\U0010ffff",
	"arn:aws:iam::123456789012:role/some-role", "0.1", "1e-30", "true", "null", "{}", "[]",
	`{"Version":"2012-10-17","Statement":[]}`,
}

func (g *gen) randRune() rune {
	for {
		var r rune
		switch g.intn(5) {
		case 0:
			r = rune(g.intn(0x80))
		case 1:
			r = rune(0x80 + g.intn(0x800-0x80))
		case 2:
			r = rune(0x800 + g.intn(0x10000-0x800))
		case 3:
			r = rune(0x10000 + g.intn(0x110000-0x10000))
		default:
			r = rune(0x20 + g.intn(0x5f))
		}
		if r < 0xd800 || r > 0xdfff {
			return r
		}
	}
}

func (g *gen) str() string {
	switch w := g.intn(100); {
	case w < 50:
		return stringPool[g.intn(len(stringPool))]
	case w < 85:
		var b strings.Builder
		for n := g.intn(40); n > 0; n-- {
			b.WriteRune(g.randRune())
		}
		return b.String()
	case w < 98:
		var b strings.Builder
		for n := 32 + g.intn(64); n > 0; n-- {
			b.WriteByte(byte('a' + g.intn(26)))
		}
		return b.String()
	default: // long: exercises str16/str32 headers
		var b strings.Builder
		n := 256 + g.intn(70000)
		for b.Len() < n {
			if g.chance(0.05) {
				b.WriteRune(g.randRune())
			} else {
				b.WriteByte(byte(' ' + g.intn(95)))
			}
		}
		return b.String()
	}
}

var decimalPool = []string{
	"0.1", "0.2", "0.3", "1e-30", "-1e-30", "123456789012345678901234.5", "3.141592653589793238462643383279",
	"-0.000001", "1e100", "12345678901234567890", "-98765432109876543210987654321", "18446744073709551616",
	"9223372036854775808", "-9223372036854775809", "0.000000000000000000000000000000000001", "2.5e-7",
	"100000000000000000000000000000000000000000000000001",
}

func (g *gen) digits(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('0' + g.intn(10))
	}
	b[0] = byte('1' + g.intn(9))
	return string(b)
}

func (g *gen) number() cty.Value {
	switch g.intn(14) {
	case 0:
		return cty.NumberIntVal(int64(g.intn(2001) - 1000))
	case 1:
		return cty.NumberIntVal(int64(g.intn(256)))
	case 2:
		ints := []int64{math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1,
			math.MaxInt32, math.MinInt32, math.MaxInt32 + 1, 127, 128, -32, -33, 255, 256, 65535, 65536, -129}
		return cty.NumberIntVal(ints[g.intn(len(ints))])
	case 3:
		us := []uint64{math.MaxUint64, 1 << 63, 1<<63 + 1, math.MaxUint64 - 1}
		return cty.NumberUIntVal(us[g.intn(len(us))])
	case 4:
		return cty.NumberIntVal(g.r.Int64() >> g.intn(63))
	case 5: // integers beyond 64 bits
		s := g.digits(20 + g.intn(40))
		if g.chance(0.5) {
			s = "-" + s
		}
		return cty.MustParseNumberVal(s)
	case 6:
		return cty.MustParseNumberVal(decimalPool[g.intn(len(decimalPool))])
	case 7: // random decimal with a random exponent
		s := g.digits(1+g.intn(30)) + "." + g.digits(1+g.intn(20))
		s += fmt.Sprintf("e%d", g.intn(101)-50)
		if g.chance(0.5) {
			s = "-" + s
		}
		return cty.MustParseNumberVal(s)
	case 8:
		return cty.NumberFloatVal(g.r.NormFloat64() * math.Pow(10, float64(g.intn(40)-20)))
	case 9:
		fs := []float64{0.5, 1.5, -2.25, 1e21, 1e-7, 0.1, 0.3, 1.0 / 3, math.MaxFloat64, -math.MaxFloat64,
			math.SmallestNonzeroFloat64, 2.2250738585072014e-308, 5e-324, 1e308, 4.35, 123456.789e3, 9007199254740993}
		return cty.NumberFloatVal(fs[g.intn(len(fs))])
	case 10: // arbitrary bit patterns
		for {
			f := math.Float64frombits(g.r.Uint64())
			if !math.IsNaN(f) && !math.IsInf(f, 0) {
				return cty.NumberFloatVal(f)
			}
		}
	case 11:
		if g.inSet > 0 {
			// cty keeps -0 and 0 as distinct set elements, but both go on
			// the wire as 0 and go-cty's decoder merges them again.
			return cty.Zero
		}
		return cty.NumberFloatVal(math.Copysign(0, -1))
	case 12:
		if g.chance(0.3) {
			// Powers of two: where shortest round-trip printing is subtle
			// (2^896 is 5.282945311356653e+269, not ...6525e+269).
			return cty.NumberFloatVal(math.Ldexp(1, g.intn(2098)-1074))
		}
		if g.chance(0.5) {
			return cty.PositiveInfinity
		}
		return cty.NegativeInfinity
	default:
		return cty.NumberFloatVal(float64(g.intn(1000000)) / 1000)
	}
}

// unknown returns an unknown of type t, refined at random.
func (g *gen) unknown(t cty.Type) (v cty.Value) {
	plain := cty.UnknownVal(t)
	if t == cty.DynamicPseudoType || g.chance(0.35) {
		return plain
	}
	defer func() {
		// The builder panics on contradictory refinements; fall back.
		if recover() != nil {
			v = plain
		}
	}()
	b := plain.Refine()
	if g.chance(0.6) {
		b = b.NotNull()
	}
	switch {
	case t == cty.String:
		if g.chance(0.8) {
			p := g.str()
			if g.chance(0.1) {
				p = strings.Repeat("ab", 100+g.intn(200)) // marshaller truncates past 256 bytes
			}
			b = b.StringPrefix(p)
		}
	case t == cty.Number:
		lo := g.number()
		if g.chance(0.6) {
			b = b.NumberRangeLowerBound(lo, g.chance(0.5))
		}
		if g.chance(0.6) {
			hi := g.number()
			if g.chance(0.7) {
				if lo.IsKnown() && !lo.IsNull() && lo != cty.PositiveInfinity && lo != cty.NegativeInfinity {
					hi = lo.Add(cty.NumberIntVal(int64(g.intn(100))))
				}
			}
			b = b.NumberRangeUpperBound(hi, g.chance(0.5))
		}
	case t.IsCollectionType():
		lo := g.intn(6)
		if g.chance(0.6) {
			b = b.CollectionLengthLowerBound(lo)
		}
		if g.chance(0.6) {
			hi := lo + g.intn(10)
			if g.chance(0.1) {
				hi = 1 << (32 + g.intn(30))
			}
			b = b.CollectionLengthUpperBound(hi)
		}
	}
	return b.NewValue()
}

// value returns a random value conforming to t. inColl says t came from
// concrete (a collection's element type), where dynamic positions may hold
// only null or wholly unknown values so that all elements share one type.
func (g *gen) value(t cty.Type, inColl bool) cty.Value {
	g.budget--
	if t == cty.DynamicPseudoType {
		if inColl {
			if g.chance(0.5) {
				return cty.NullVal(cty.DynamicPseudoType)
			}
			return cty.DynamicVal
		}
		switch w := g.intn(100); {
		case w < 8:
			return cty.NullVal(cty.DynamicPseudoType)
		case w < 16:
			return cty.DynamicVal
		default:
			return g.value(g.typ(g.intn(3), false), false)
		}
	}
	if g.chance(0.07) {
		return cty.NullVal(t)
	}
	if g.chance(0.06) {
		return g.unknown(t)
	}
	switch {
	case t == cty.String:
		return cty.StringVal(g.str())
	case t == cty.Number:
		return g.number()
	case t == cty.Bool:
		return cty.BoolVal(g.chance(0.5))
	case t.IsListType(), t.IsSetType(), t.IsMapType():
		return g.collection(t, inColl)
	case t.IsTupleType():
		etys := t.TupleElementTypes()
		vals := make([]cty.Value, len(etys))
		for i, e := range etys {
			vals[i] = g.value(e, inColl)
		}
		if len(vals) == 0 {
			return cty.EmptyTupleVal
		}
		return cty.TupleVal(vals)
	case t.IsObjectType():
		atys := t.AttributeTypes()
		vals := make(map[string]cty.Value, len(atys))
		for k, a := range atys {
			if t.AttributeOptional(k) && g.chance(0.3) {
				vals[k] = cty.NullVal(a)
				continue
			}
			vals[k] = g.value(a, inColl)
		}
		if len(vals) == 0 {
			return cty.EmptyObjectVal
		}
		return cty.ObjectVal(vals)
	}
	panic("unexpected type " + t.GoString())
}

func (g *gen) collection(t cty.Type, inColl bool) cty.Value {
	ety := t.ElementType()
	if !inColl { // inside a collection the type is concrete already
		ety = g.concrete(ety)
	}
	n := 0
	switch w := g.intn(100); {
	case g.budget <= 0 || w < 15:
		n = 0
	case w < 85:
		n = 1 + g.intn(4)
	case w < 98:
		n = 5 + g.intn(20)
	default:
		if ety.IsPrimitiveType() { // large sets and lists of scalars
			n = 200 + g.intn(2000)
		} else {
			n = 30 + g.intn(30)
		}
	}
	vals := make([]cty.Value, 0, n)
	if t.IsSetType() {
		g.inSet++
		defer func() { g.inSet-- }()
	}
	for i := 0; i < n; i++ {
		vals = append(vals, g.value(ety, true))
	}
	switch {
	case t.IsListType():
		if n == 0 {
			return cty.ListValEmpty(ety)
		}
		return cty.ListVal(vals)
	case t.IsSetType():
		if n == 0 {
			return cty.SetValEmpty(ety)
		}
		return cty.SetVal(vals)
	default:
		if n == 0 {
			return cty.MapValEmpty(ety)
		}
		m := make(map[string]cty.Value, n)
		for _, v := range vals {
			m[g.str()] = v
		}
		return cty.MapVal(m)
	}
}

// deepValue fills a deepType chain with one element per level.
func (g *gen) deepValue(t cty.Type) cty.Value {
	switch {
	case t.IsPrimitiveType():
		return g.value(t, false)
	case t.IsListType():
		return cty.ListVal([]cty.Value{g.deepValue(t.ElementType())})
	case t.IsSetType():
		return cty.SetVal([]cty.Value{g.deepValue(t.ElementType())})
	case t.IsMapType():
		return cty.MapVal(map[string]cty.Value{g.str(): g.deepValue(t.ElementType())})
	case t.IsTupleType():
		return cty.TupleVal([]cty.Value{g.deepValue(t.TupleElementTypes()[0])})
	default:
		return cty.ObjectVal(map[string]cty.Value{"n": g.deepValue(t.AttributeType("n"))})
	}
}

// testCase draws one type and value.
func (g *gen) testCase() (cty.Type, cty.Value) {
	g.budget = 300
	if g.chance(0.02) {
		t := g.deepType(20 + g.intn(100))
		return t, g.deepValue(t)
	}
	t := g.typ(1+g.intn(4), true)
	return t, g.value(t, false)
}

// safeTestCase is testCase with go-cty's panics (on values it considers
// inconsistent) turned into errors.
func (g *gen) safeTestCase() (t cty.Type, v cty.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	t, v = g.testCase()
	return t, v, nil
}
