// Package render writes a go-cty value as tftap's decoded-value JSON
// (design.md, "Decoded value JSON"): the reference rendering that the
// cross-check compares tftap's decoder against, and the output the Go side
// of the decode benchmark produces.
//
// Unknown values carry their refinements under the same conditions go-cty's
// msgpack marshaller writes them, so a value decoded from msgpack renders
// the refinements that were on the wire.
package render

import (
	"errors"
	"math"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
)

// Value appends the contract JSON of v, which must conform to ty, to dst.
// Positions typed dynamic in ty are wrapped as {"type": ..., "value": ...}.
func Value(dst []byte, v cty.Value, ty cty.Type) ([]byte, error) {
	if ty == cty.DynamicPseudoType {
		vt := v.Type()
		if vt == cty.DynamicPseudoType {
			// Wholly unknown (refinements are never kept for these) or null.
			if !v.IsKnown() {
				return append(dst, `{"$unknown":{}}`...), nil
			}
			return append(dst, "null"...), nil
		}
		tj, err := vt.MarshalJSON()
		if err != nil {
			return dst, err
		}
		dst = append(dst, `{"type":`...)
		dst = append(dst, tj...)
		dst = append(dst, `,"value":`...)
		dst, err = Value(dst, v, vt)
		if err != nil {
			return dst, err
		}
		return append(dst, '}'), nil
	}
	if !v.IsKnown() {
		return unknown(dst, v, ty)
	}
	if v.IsNull() {
		return append(dst, "null"...), nil
	}
	var err error
	switch {
	case ty == cty.String:
		dst = String(dst, v.AsString())
	case ty == cty.Number:
		if dst, err = Number(dst, v); err != nil {
			return dst, err
		}
	case ty == cty.Bool:
		if v.True() {
			dst = append(dst, "true"...)
		} else {
			dst = append(dst, "false"...)
		}
	case ty.IsListType() || ty.IsSetType():
		ety := ty.ElementType()
		dst = append(dst, '[')
		first := true
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			if !first {
				dst = append(dst, ',')
			}
			first = false
			if dst, err = Value(dst, ev, ety); err != nil {
				return dst, err
			}
		}
		dst = append(dst, ']')
	case ty.IsTupleType():
		etys := ty.TupleElementTypes()
		dst = append(dst, '[')
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			_, ev := it.Element()
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = Value(dst, ev, etys[i]); err != nil {
				return dst, err
			}
		}
		dst = append(dst, ']')
	case ty.IsMapType():
		ety := ty.ElementType()
		dst = append(dst, '{')
		first := true
		// ElementIterator walks map keys in lexical order already.
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = String(dst, k.AsString())
			dst = append(dst, ':')
			if dst, err = Value(dst, ev, ety); err != nil {
				return dst, err
			}
		}
		dst = append(dst, '}')
	case ty.IsObjectType():
		atys := ty.AttributeTypes()
		names := make([]string, 0, len(atys))
		for k := range atys {
			names = append(names, k)
		}
		sort.Strings(names)
		dst = append(dst, '{')
		for i, k := range names {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = String(dst, k)
			dst = append(dst, ':')
			if dst, err = Value(dst, v.GetAttr(k), atys[k]); err != nil {
				return dst, err
			}
		}
		dst = append(dst, '}')
	default:
		return dst, errUnsupported(ty)
	}
	return dst, nil
}

type errUnsupported cty.Type

func (e errUnsupported) Error() string {
	return "render: unsupported type " + cty.Type(e).FriendlyName()
}

// ErrHugeNumber: a number whose binary exponent is beyond ±MaxExponent,
// which go-cty reads from strings like "1e999999999". Writing such a value
// in decimal takes time and memory in proportion to its exponent.
var ErrHugeNumber = errors.New("render: number exponent too large to write in decimal")

// MaxExponent bounds the binary exponents Number writes (float64's largest
// is 1024).
const MaxExponent = 1 << 14

// Number appends a known, non-null number: infinities as the strings
// "Infinity"/"-Infinity", everything else as the shortest decimal that
// denotes exactly the stored binary value.
func Number(dst []byte, v cty.Value) ([]byte, error) {
	bf := v.AsBigFloat()
	if bf.IsInf() {
		if bf.Sign() > 0 {
			return append(dst, `"Infinity"`...), nil
		}
		return append(dst, `"-Infinity"`...), nil
	}
	if e := bf.MantExp(nil); e > MaxExponent || e < -MaxExponent {
		return dst, ErrHugeNumber
	}
	if bf.Prec() == 53 {
		// Came from a float64 (msgpack float, cty.NumberFloatVal): the
		// contract's shortest round-trip form, as strconv writes it, also
		// for integral values past 2^53 (-5.390105066520707e+16).
		f, _ := bf.Float64()
		return strconv.AppendFloat(dst, f, 'g', -1, 64), nil
	}
	if bf.IsInt() {
		if i, acc := bf.Int64(); acc == 0 {
			return strconv.AppendInt(dst, i, 10), nil
		}
	}
	// A decimal parsed at go-cty's 512-bit precision: the shortest decimal
	// that denotes it; 'g' keeps huge and tiny magnitudes short.
	return bf.Append(dst, 'g', -1), nil
}

// unknown appends {"$unknown": {...}} with the refinements go-cty's
// msgpack marshaller would encode for v.
func unknown(dst []byte, v cty.Value, ty cty.Type) ([]byte, error) {
	var err error
	rng := v.Range()
	dst = append(dst, `{"$unknown":{`...)
	n := 0
	key := func(k string) {
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, '"')
		dst = append(dst, k...)
		dst = append(dst, `":`...)
	}
	if rng.DefinitelyNotNull() {
		key("null")
		dst = append(dst, "false"...)
	}
	switch {
	case ty == cty.Number:
		lower, lowerInc := rng.NumberLowerBound()
		upper, upperInc := rng.NumberUpperBound()
		// Same test as the marshaller: an unset bound is the shared
		// NegativeInfinity/PositiveInfinity value.
		if lower.IsKnown() && lower != cty.NegativeInfinity {
			key("lower")
			if dst, err = bound(dst, lower, lowerInc); err != nil {
				return dst, err
			}
		}
		if upper.IsKnown() && upper != cty.PositiveInfinity {
			key("upper")
			if dst, err = bound(dst, upper, upperInc); err != nil {
				return dst, err
			}
		}
	case ty == cty.String:
		if p := rng.StringPrefix(); p != "" {
			key("prefix")
			dst = String(dst, p)
		}
	case ty.IsCollectionType():
		if l := rng.LengthLowerBound(); l != 0 {
			key("min_len")
			dst = strconv.AppendInt(dst, int64(l), 10)
		}
		if u := rng.LengthUpperBound(); u != math.MaxInt {
			key("max_len")
			dst = strconv.AppendInt(dst, int64(u), 10)
		}
	}
	return append(dst, "}}"...), nil
}

func bound(dst []byte, v cty.Value, inclusive bool) ([]byte, error) {
	dst = append(dst, '[')
	dst, err := Number(dst, v)
	if inclusive {
		return append(dst, ",true]"...), err
	}
	return append(dst, ",false]"...), err
}

const hexDigits = "0123456789abcdef"

// String appends s as a JSON string (no HTML escaping; invalid UTF-8 bytes
// become U+FFFD, as encoding/json does).
func String(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c >= 0x20:
				dst = append(dst, c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}
