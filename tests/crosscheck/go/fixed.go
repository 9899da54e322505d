package main

// Hand-made payloads that go-cty's encoder never writes but peers or
// damaged bytes can present, run on every invocation beside the random
// draws. Each is judged like a damaged payload (tftap rejects it, or
// decodes it as go-cty does); mustReject ones tftap has to refuse whatever
// go-cty does with them.

import (
	"encoding/hex"
	"strings"

	"github.com/zclconf/go-cty/cty"
)

type fixedCase struct {
	label      string
	typeJSON   string
	hex        string // msgpack, spaces ignored
	mustReject bool
}

var fixedCases = []fixedCase{
	{"float32 number", `"number"`, "ca 3fc00000", false},
	{"float64 negative zero", `"number"`, "cb 8000000000000000", false},
	{"float64 NaN", `"number"`, "cb 7ff8000000000000", true},
	{"float64 2^896 (shortest form)", `"number"`, "cb 77f0000000000000", false},
	{"float64 2^-1019 (shortest form)", `"number"`, "cb 0040000000000000", false},
	{"float32 NaN", `"number"`, "ca 7fc00000", true},
	{"float64 +Inf", `"number"`, "cb 7ff0000000000000", false},
	{"uint64 max", `"number"`, "cf ffffffffffffffff", false},
	{"int64 min", `"number"`, "d3 8000000000000000", false},
	{"uint8 in int form", `"number"`, "cc ff", false},
	{"decimal string 1e-30", `"number"`, "a5 31652d3330", false},
	{"decimal string -0", `"number"`, "a2 2d30", false},
	{"decimal string with space", `"number"`, "a2 2031", false},
	{"decimal string +1", `"number"`, "a2 2b31", false},
	{"decimal string hex", `"number"`, "a4 30783130", false},
	{"decimal string Inf", `"number"`, "a3 496e66", false},
	{"decimal string NaN", `"number"`, "a3 4e614e", true},
	{"empty decimal string", `"number"`, "a0", true},
	{"bool for number", `"number"`, "c3", true},
	{"string with invalid UTF-8", `"string"`, "a2 61ff", true},
	{"string with a NUL", `"string"`, "a3 610062", false},
	{"overlong UTF-8", `"string"`, "a2 c0af", true},
	{"UTF-8 surrogate", `"string"`, "a3 eda080", true},
	{"str8 header for a short string", `"string"`, "d9 03 616263", false},
	{"bin for a string", `"string"`, "c4 03 616263", false},
	{"number for a string", `"string"`, "01", true},
	{"empty payload", `"string"`, "", true},
	{"trailing byte", `"bool"`, "c3 c3", true},
	{"nil for every type", `["object",{"a":["list","string"]}]`, "c0", false},
	{"unknown, fixext1 code 0", `"string"`, "d4 00 00", false},
	{"unknown, ext8 of length 0", `"string"`, "c7 00 00", false},
	{"unknown, other code, length 1", `"number"`, "d4 05 00", false},
	{"refined unknown, empty map", `"string"`, "c7 01 0c 80", false},
	{"refined unknown, not a map", `"string"`, "c7 02 0c 91 01", false},
	{"refined unknown for dynamic", `"dynamic"`, "c7 03 0c 81 01 c2", false},
	{"refinement: null true", `"string"`, "c7 03 0c 81 01 c3", false},
	{"refinement: prefix on a number", `"number"`, "c7 04 0c 81 02 a1 61", false},
	// The same key twice (found by draw 11228 of seed 3731551479323643765):
	// no one meaning, so tftap refuses it.
	{"refinement: max_len twice", `["set","string"]`, "c7 07 0c 83 01 c2 06 01 06 08", true},
	{"refinement: not-null twice", `"string"`, "c7 05 0c 82 01 c2 01 c2", true},
	{"refinement: bounds as a float", `"number"`, "c7 0d 0c 81 03 92 cb 3ff8000000000000 c3", false},
	{"refinement: bound as a decimal string", `"number"`, "c7 08 0c 81 04 92 a3 302e31 c2", false},
	{"refinement: negative max length", `["list","string"]`, "c7 03 0c 81 06 ff", false},
	{"refinement over 1 KiB", `"string"`, "c8 0405 0c 81 02 da 0400" + strings.Repeat("61", 1024), false},
	{"map with a duplicate key", `["map","number"]`, "82 a1 61 01 a1 61 02", false},
	{"map with a non-string key", `["map","number"]`, "81 01 01", true},
	{"object missing an attribute", `["object",{"a":"number","b":"number"}]`, "81 a1 61 01", true},
	{"object with an extra attribute", `["object",{"a":"number"}]`, "82 a1 61 01 a1 62 02", true},
	{"object with a duplicate attribute", `["object",{"a":"number","b":"number"}]`, "82 a1 61 01 a1 61 02", true},
	{"empty map for an object", `["object",{"a":"number"}]`, "80", true},
	{"tuple too short", `["tuple",["number","number"]]`, "91 01", true},
	{"empty array for a tuple", `["tuple",["number"]]`, "90", true},
	{"set with duplicate elements", `["set","number"]`, "93 01 01 02", false},
	{"list of mixed dynamic types", `["list","dynamic"]`, "92 92 c4 08 22737472696e6722 a1 61 92 c4 08 226e756d62657222 01", false},
	{"dynamic: three elements", `"dynamic"`, "93 c4 06 22626f6f6c22 c3 c3", true},
	{"dynamic: type JSON as str", `"dynamic"`, "92 a6 22626f6f6c22 c3", false},
	{"dynamic: bad type JSON", `"dynamic"`, "92 c4 05 22666f6f22 c3", true},
	{"dynamic: control character in type JSON", `"dynamic"`, "92 c4 07 22626f0c6f6c22 c3", true},
	{"dynamic: tab in type JSON string", `"dynamic"`, "92 c4 07 22626f096f6c22 c3", true},
	{"dynamic: whitespace around type JSON", `"dynamic"`, "92 c4 09 0a2022626f6f6c22 09 c3", false},
	{"dynamic: nested dynamic", `"dynamic"`, "92 c4 09 2264796e616d696322 92 c4 06 22626f6f6c22 c3", false},
	{"dynamic holding unknown string", `"dynamic"`, "92 c4 08 22737472696e6722 d4 00 00", false},
	{"array32 claiming 4G items", `["list","number"]`, "dd ffffffff 01", true},
	{"map32 claiming 4G items", `["map","number"]`, "df ffffffff a1 61 01", true},
	{"str32 claiming 4 GiB", `"string"`, "db ffffffff 61", true},
	{"deep list nesting", deepListType(300), strings.Repeat("91", 300) + "01", false},
}

func deepListType(n int) string {
	return strings.Repeat(`["list",`, n) + `"number"` + strings.Repeat("]", n)
}

// fixedTestCases turns fixedCases into negative test cases.
func fixedTestCases() []*tcase {
	var out []*tcase
	for i, f := range fixedCases {
		var ty cty.Type
		if err := ty.UnmarshalJSON([]byte(f.typeJSON)); err != nil {
			panic("fixed case " + f.label + ": " + err.Error())
		}
		b, err := hex.DecodeString(strings.ReplaceAll(f.hex, " ", ""))
		if err != nil {
			panic("fixed case " + f.label + ": " + err.Error())
		}
		out = append(out, &tcase{
			index: -1 - i, label: "fixed: " + f.label, kind: 'm', ty: ty, tyJSON: []byte(f.typeJSON),
			val: cty.NilVal, payload: b, negative: true, mustReject: f.mustReject,
			ref: refDecode('m', b, ty),
		})
	}
	return out
}
