package main

import (
	"sort"

	"google.golang.org/protobuf/encoding/protowire"
)

// Just enough protobuf and msgpack to build the few requests the benchmark
// sends; answers are only checked for diagnostics.

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func pbBytes(num int, b []byte) []byte {
	out := protowire.AppendTag(nil, protowire.Number(num), protowire.BytesType)
	return protowire.AppendBytes(out, b)
}

func pbString(num int, s string) []byte { return pbBytes(num, []byte(s)) }

// dv wraps msgpack bytes in a DynamicValue.
func dv(msgpack []byte) []byte { return pbBytes(1, msgpack) }

// pbFields returns every length-delimited value of field num, in order.
func pbFields(msg []byte, num int) [][]byte {
	var out [][]byte
	for len(msg) > 0 {
		n, typ, l := protowire.ConsumeTag(msg)
		if l < 0 {
			return out
		}
		msg = msg[l:]
		l = protowire.ConsumeFieldValue(n, typ, msg)
		if l < 0 {
			return out
		}
		if typ == protowire.BytesType && int(n) == num {
			v, _ := protowire.ConsumeBytes(msg)
			out = append(out, v)
		}
		msg = msg[l:]
	}
	return out
}

func mpNil() []byte { return []byte{0xc0} }

// mpStr writes a short string (every string here is under 32 bytes).
func mpStr(s string) []byte {
	if len(s) >= 32 {
		panic("mpStr: long strings are not needed here")
	}
	return append([]byte{0xa0 | byte(len(s))}, s...)
}

// mpMap writes a small map with its keys sorted, as go-cty does for objects.
func mpMap(m map[string][]byte) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) >= 16 {
		panic("mpMap: large maps are not needed here")
	}
	out := []byte{0x80 | byte(len(keys))}
	for _, k := range keys {
		out = append(out, mpStr(k)...)
		out = append(out, m[k]...)
	}
	return out
}
