package main

import (
	"encoding/binary"
	"math"
	"sort"

	"google.golang.org/protobuf/encoding/protowire"
)

// ---- protobuf wire helpers: just enough to build requests and read replies --

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func pbBytes(num int, b []byte) []byte {
	if b == nil {
		return nil
	}
	out := protowire.AppendTag(nil, protowire.Number(num), protowire.BytesType)
	return protowire.AppendBytes(out, b)
}

func pbString(num int, s string) []byte { return pbBytes(num, []byte(s)) }

// dv is a DynamicValue carrying msgpack.
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
		if typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(msg)
			if l < 0 {
				return out
			}
			if int(n) == num {
				out = append(out, v)
			}
			msg = msg[l:]
			continue
		}
		l = protowire.ConsumeFieldValue(n, typ, msg)
		if l < 0 {
			return out
		}
		msg = msg[l:]
	}
	return out
}

// pbCanonical sorts a message's top-level fields (each kept as its exact
// bytes), making map entries order-independent.
func pbCanonical(msg []byte) []byte {
	var fields [][]byte
	rest := msg
	for len(rest) > 0 {
		n, typ, l := protowire.ConsumeTag(rest)
		if l < 0 {
			return msg
		}
		v := protowire.ConsumeFieldValue(n, typ, rest[l:])
		if v < 0 {
			return msg
		}
		fields = append(fields, rest[:l+v])
		rest = rest[l+v:]
	}
	sort.Slice(fields, func(i, j int) bool { return string(fields[i]) < string(fields[j]) })
	return cat(fields...)
}

func pbField(msg []byte, num int) []byte {
	f := pbFields(msg, num)
	if len(f) == 0 {
		return nil
	}
	return f[len(f)-1]
}

func pbVarint(msg []byte, num int) uint64 {
	var val uint64
	for len(msg) > 0 {
		n, typ, l := protowire.ConsumeTag(msg)
		if l < 0 {
			return val
		}
		msg = msg[l:]
		if typ == protowire.VarintType && int(n) == num {
			v, l := protowire.ConsumeVarint(msg)
			if l < 0 {
				return val
			}
			val = v
			msg = msg[l:]
			continue
		}
		l = protowire.ConsumeFieldValue(n, typ, msg)
		if l < 0 {
			return val
		}
		msg = msg[l:]
	}
	return val
}

// ---- msgpack, as go-cty writes it for the values these tests send -----------

func mpNil() []byte { return []byte{0xc0} }

func mpStr(s string) []byte {
	n := len(s)
	var out []byte
	switch {
	case n < 32:
		out = []byte{0xa0 | byte(n)}
	case n <= math.MaxUint8:
		out = []byte{0xd9, byte(n)}
	case n <= math.MaxUint16:
		out = binary.BigEndian.AppendUint16([]byte{0xda}, uint16(n))
	default:
		out = binary.BigEndian.AppendUint32([]byte{0xdb}, uint32(n))
	}
	return append(out, s...)
}

func mpBin(b []byte) []byte {
	n := len(b)
	var out []byte
	switch {
	case n <= math.MaxUint8:
		out = []byte{0xc4, byte(n)}
	case n <= math.MaxUint16:
		out = binary.BigEndian.AppendUint16([]byte{0xc5}, uint16(n))
	default:
		out = binary.BigEndian.AppendUint32([]byte{0xc6}, uint32(n))
	}
	return append(out, b...)
}

func mpArray(items ...[]byte) []byte {
	n := len(items)
	var out []byte
	if n < 16 {
		out = []byte{0x90 | byte(n)}
	} else {
		out = binary.BigEndian.AppendUint16([]byte{0xdc}, uint16(n))
	}
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

// mpMap writes keys sorted, as go-cty does for objects and maps.
func mpMap(m map[string][]byte) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []byte
	if len(keys) < 16 {
		out = []byte{0x80 | byte(len(keys))}
	} else {
		out = binary.BigEndian.AppendUint16([]byte{0xde}, uint16(len(keys)))
	}
	for _, k := range keys {
		out = append(out, mpStr(k)...)
		out = append(out, m[k]...)
	}
	return out
}
