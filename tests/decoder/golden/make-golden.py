#!/usr/bin/env python3
"""Writes the decoder's golden vectors: NAME.type (cty type JSON), NAME.msgpack
or NAME.json (the payload), optional NAME.args (extra decode options) and
NAME.expected.json (compact output) or NAME.expected.err (the error line).

The msgpack bytes are written by the tiny encoder below, byte by byte, so
every encoding the wire format allows can be produced on purpose (including
the non-minimal ones). Rerun after editing; the outputs are committed."""
import json, os, struct, sys

here = os.path.dirname(os.path.abspath(__file__))
for f in os.listdir(here):
    if f.split(".")[-1] in ("type", "msgpack", "json", "args", "err") and f != "make-golden.py":
        os.remove(os.path.join(here, f))

class Raw(bytes):
    pass

class JsonBytes(bytes):
    """A JSON payload given as raw bytes (to write invalid UTF-8)."""

def nil(): return Raw(b"\xc0")
def b(v): return Raw(b"\xc3" if v else b"\xc2")
def fixint(v): return Raw(struct.pack("B", v & 0xff))
def u8(v): return Raw(b"\xcc" + struct.pack(">B", v))
def u16(v): return Raw(b"\xcd" + struct.pack(">H", v))
def u32(v): return Raw(b"\xce" + struct.pack(">I", v))
def u64(v): return Raw(b"\xcf" + struct.pack(">Q", v))
def i8(v): return Raw(b"\xd0" + struct.pack(">b", v))
def i16(v): return Raw(b"\xd1" + struct.pack(">h", v))
def i32(v): return Raw(b"\xd2" + struct.pack(">i", v))
def i64(v): return Raw(b"\xd3" + struct.pack(">q", v))
def f32(v): return Raw(b"\xca" + struct.pack(">f", v))
def f64(v): return Raw(b"\xcb" + struct.pack(">d", v))

def s(v, form=None):
    d = v.encode() if isinstance(v, str) else v
    n = len(d)
    if form is None:
        form = "fix" if n < 32 else "8" if n < 256 else "16" if n < 65536 else "32"
    if form == "fix": return Raw(bytes([0xa0 | n]) + d)
    if form == "8": return Raw(b"\xd9" + struct.pack(">B", n) + d)
    if form == "16": return Raw(b"\xda" + struct.pack(">H", n) + d)
    return Raw(b"\xdb" + struct.pack(">I", n) + d)

def binv(v, form="8"):
    d = v.encode() if isinstance(v, str) else v
    n = len(d)
    if form == "8": return Raw(b"\xc4" + struct.pack(">B", n) + d)
    if form == "16": return Raw(b"\xc5" + struct.pack(">H", n) + d)
    return Raw(b"\xc6" + struct.pack(">I", n) + d)

def arr(*items, form=None):
    n = len(items)
    form = form or ("fix" if n < 16 else "16")
    head = bytes([0x90 | n]) if form == "fix" else (b"\xdc" + struct.pack(">H", n) if form == "16" else b"\xdd" + struct.pack(">I", n))
    return Raw(head + b"".join(enc(i) for i in items))

def mp(*pairs, form=None):
    n = len(pairs)
    form = form or ("fix" if n < 16 else "16")
    head = bytes([0x80 | n]) if form == "fix" else (b"\xde" + struct.pack(">H", n) if form == "16" else b"\xdf" + struct.pack(">I", n))
    return Raw(head + b"".join(enc(k) + enc(v) for k, v in pairs))

def ext(code, payload):
    n = len(payload)
    fixed = {1: 0xd4, 2: 0xd5, 4: 0xd6, 8: 0xd7, 16: 0xd8}
    if n in fixed:
        return Raw(bytes([fixed[n], code & 0xff]) + payload)
    if n < 256: return Raw(b"\xc7" + struct.pack(">B", n) + bytes([code & 0xff]) + payload)
    if n < 65536: return Raw(b"\xc8" + struct.pack(">H", n) + bytes([code & 0xff]) + payload)
    return Raw(b"\xc9" + struct.pack(">I", n) + bytes([code & 0xff]) + payload)

UNKNOWN = Raw(b"\xd4\x00\x00")
def refined(*pairs): return ext(12, enc(mp(*pairs)))

def enc(v):
    if isinstance(v, Raw): return bytes(v)
    if v is None: return bytes(nil())
    if isinstance(v, bool): return bytes(b(v))
    if isinstance(v, int):
        if 0 <= v < 128: return bytes(fixint(v))
        if -32 <= v < 0: return bytes(fixint(v))
        return bytes(i64(v)) if v < 0 else bytes(u64(v))
    if isinstance(v, float): return bytes(f64(v))
    if isinstance(v, str): return bytes(s(v))
    raise TypeError(v)

def case(name, typ, payload, expected=None, err=None, args=None, raw_err=None):
    t = typ if isinstance(typ, str) else json.dumps(typ, separators=(",", ":"))
    open(os.path.join(here, name + ".type"), "w").write(t + "\n")
    if isinstance(payload, JsonBytes):
        open(os.path.join(here, name + ".json"), "wb").write(payload)
    elif isinstance(payload, str):
        open(os.path.join(here, name + ".json"), "w").write(payload)
    else:
        open(os.path.join(here, name + ".msgpack"), "wb").write(enc(payload))
    if args:
        open(os.path.join(here, name + ".args"), "w").write(args + "\n")
    if raw_err is not None:
        open(os.path.join(here, name + ".expected.err"), "w").write(raw_err + "\n")
    elif err is not None:
        open(os.path.join(here, name + ".expected.err"), "w").write("tftap: decode error at " + err + "\n")
    else:
        open(os.path.join(here, name + ".expected.json"), "w").write(expected + "\n")

# ---- msgpack: Schema.Attribute table, row by row -------------------------
case("mp_string_fix", '"string"', s("hello"), '"hello"')
case("mp_string_str8", '"string"', s("a" * 40, "8"), json.dumps("a" * 40))
case("mp_string_str16", '"string"', s("b" * 300, "16"), json.dumps("b" * 300))
case("mp_string_str32", '"string"', s("xyz", "32"), '"xyz"')
case("mp_string_bin8", '"string"', binv("from bin"), '"from bin"')
case("mp_string_empty", '"string"', s(""), '""')
case("mp_string_unicode", '"string"', s("h\u00e9llo \u2713 \U0001F600"), '"h\u00e9llo \u2713 \U0001F600"')
case("mp_string_escapes", '"string"', s('q"b\\n\nt\tc\x01'), '"q\\"b\\\\n\\nt\\tc\\u0001"')
case("mp_number_fixint", '"number"', fixint(7), "7")
case("mp_number_negfixint", '"number"', fixint(-5), "-5")
case("mp_number_uint8", '"number"', u8(200), "200")
case("mp_number_uint16", '"number"', u16(65535), "65535")
case("mp_number_uint32", '"number"', u32(4294967295), "4294967295")
case("mp_number_uint64_max", '"number"', u64(18446744073709551615), "18446744073709551615")
case("mp_number_int8", '"number"', i8(-100), "-100")
case("mp_number_int16", '"number"', i16(-30000), "-30000")
case("mp_number_int32", '"number"', i32(-2000000000), "-2000000000")
case("mp_number_int64_min", '"number"', i64(-9223372036854775808), "-9223372036854775808")
case("mp_number_float64_half", '"number"', f64(0.5), "0.5")
case("mp_number_float64_big", '"number"', f64(1e300), "1e+300")
case("mp_number_float64_pi", '"number"', f64(3.141592653589793), "3.141592653589793")
case("mp_number_float64_integral", '"number"', f64(42.0), "42")
case("mp_number_float32", '"number"', f32(0.25), "0.25")
case("mp_number_float32_inexact", '"number"', f32(0.1), "0.10000000149011612")
case("mp_number_float_inf", '"number"', f64(float("inf")), '"Infinity"')
case("mp_number_float_neginf", '"number"', f64(float("-inf")), '"-Infinity"')
case("mp_number_string_decimal", '"number"', s("0.1"), "0.1")
case("mp_number_string_tiny", '"number"', s("1e-30"), "1e-30")
case("mp_number_string_huge", '"number"', s("123456789012345678901234567890.123456789"), "123456789012345678901234567890.123456789")
case("mp_number_string_bigint", '"number"', s("-98765432109876543210987654321"), "-98765432109876543210987654321")
case("mp_number_string_plus", '"number"', s("+5"), "5")
case("mp_number_string_leading_dot", '"number"', s("-.5"), "-0.5")
case("mp_number_string_trailing_dot", '"number"', s("5."), "5")
case("mp_number_string_leading_zeros", '"number"', s("007.50"), "7.50")
case("mp_number_string_inf", '"number"', s("-Inf"), '"-Infinity"')
case("mp_bool_true", '"bool"', b(True), "true")
case("mp_bool_false", '"bool"', b(False), "false")
case("mp_list", '["list","string"]', arr("a", "b", "c"), '["a","b","c"]')
case("mp_list_array16", '["list","number"]', arr(1, 2, form="16"), "[1,2]")
case("mp_list_array32", '["list","number"]', arr(1, form="32"), "[1]")
case("mp_list_empty", '["list","string"]', arr(), "[]")
case("mp_list_null_and_unknown_elements", '["list","string"]', arr("a", None, UNKNOWN), '["a",null,{"$unknown":{}}]')
case("mp_set", '["set","number"]', arr(3, 1, 2), "[3,1,2]")
case("mp_map", '["map","string"]', mp(("a", "x"), ("b", "y")), '{"a":"x","b":"y"}')
case("mp_map16", '["map","bool"]', mp(("k", True), form="16"), '{"k":true}')
case("mp_map32", '["map","bool"]', mp(("k", False), form="32"), '{"k":false}')
case("mp_map_empty", '["map","string"]', mp(), "{}")
case("mp_map_escaped_key", '["map","number"]', mp(('a"b', 1)), '{"a\\"b":1}')
case("mp_object", '["object",{"id":"string","n":"number","ok":"bool"}]',
     mp(("id", "i-1"), ("n", 3), ("ok", True)), '{"id":"i-1","n":3,"ok":true}')
case("mp_object_optional_attrs", '["object",{"a":"string","b":"number"},["b"]]',
     mp(("a", "x"), ("b", None)), '{"a":"x","b":null}')
case("mp_object_empty", '["object",{}]', mp(), "{}")
case("mp_tuple", '["tuple",["string","number","bool"]]', arr("a", 1, False), '["a",1,false]')
case("mp_tuple_empty", '["tuple",[]]', arr(), "[]")
case("mp_dynamic_string", '"dynamic"', arr(binv('"string"'), "x"), '{"type":"string","value":"x"}')
case("mp_dynamic_list", '"dynamic"', arr(binv('["list","number"]'), arr(1, 2)), '{"type":["list","number"],"value":[1,2]}')
case("mp_dynamic_object", '"dynamic"', arr(binv('["object",{"z":"bool","a":"string"}]'), mp(("a", "v"), ("z", True))),
     '{"type":["object",{"a":"string","z":"bool"}],"value":{"a":"v","z":true}}')
case("mp_dynamic_type_as_str", '"dynamic"', arr(s('"bool"'), True), '{"type":"bool","value":true}')
case("mp_dynamic_null", '"dynamic"', nil(), "null")
case("mp_dynamic_unknown", '"dynamic"', UNKNOWN, '{"$unknown":{}}')
case("mp_dynamic_inner_unknown", '"dynamic"', arr(binv('"number"'), UNKNOWN), '{"type":"number","value":{"$unknown":{}}}')
case("mp_dynamic_nested", '["map","dynamic"]', mp(("d", arr(binv('"dynamic"'), arr(binv('"number"'), 5)))),
     '{"d":{"type":"dynamic","value":{"type":"number","value":5}}}')
for t in ("string", "number", "bool"):
    case("mp_null_" + t, '"%s"' % t, nil(), "null")
case("mp_null_list", '["list","string"]', nil(), "null")
case("mp_null_map", '["map","string"]', nil(), "null")
case("mp_null_object", '["object",{"a":"string"}]', nil(), "null")
case("mp_null_tuple", '["tuple",["string"]]', nil(), "null")

# ---- unknown values and refinements -------------------------------------
case("mp_unknown", '"string"', UNKNOWN, '{"$unknown":{}}')
case("mp_unknown_list", '["list","string"]', UNKNOWN, '{"$unknown":{}}')
case("mp_unknown_other_code_fixext2", '"string"', ext(5, b"\x01\x02"), '{"$unknown":{}}')
case("mp_unknown_other_code_ext8", '"number"', ext(3, b"0123456789"), '{"$unknown":{}}')
case("mp_unknown_negative_code", '"bool"', ext(-1, b"\x00"), '{"$unknown":{}}')
case("mp_unknown_code12_one_byte", '"string"', ext(12, b"\x00"), '{"$unknown":{}}')
case("mp_refined_not_null", '"string"', refined((1, False)), '{"$unknown":{"null":false}}')
case("mp_refined_null_true", '"string"', refined((1, True)), '{"$unknown":{"null":true}}')
case("mp_refined_prefix", '"string"', refined((1, False), (2, "ami-")), '{"$unknown":{"null":false,"prefix":"ami-"}}')
case("mp_refined_number_bounds", '"number"', refined((3, arr(0, True)), (4, arr(10, False))),
     '{"$unknown":{"lower":[0,true],"upper":[10,false]}}')
case("mp_refined_number_bound_decimal", '"number"', refined((3, arr(s("0.5"), False))), '{"$unknown":{"lower":[0.5,false]}}')
case("mp_refined_number_bound_float", '"number"', refined((4, arr(f64(2.5), True))), '{"$unknown":{"upper":[2.5,true]}}')
case("mp_refined_length_bounds", '["list","string"]', refined((1, False), (5, 1), (6, 5)),
     '{"$unknown":{"null":false,"min_len":1,"max_len":5}}')
case("mp_refined_length_set", '["set","number"]', refined((5, 2)), '{"$unknown":{"min_len":2}}')
case("mp_refined_length_map", '["map","number"]', refined((6, 3)), '{"$unknown":{"max_len":3}}')
case("mp_refined_unknown_key_ignored", '"string"', refined((9, arr(1, mp(("x", arr()))))  , (2, "p")),
     '{"$unknown":{"prefix":"p"}}')
case("mp_refined_dynamic_ignored", '"dynamic"', refined((1, False)), '{"$unknown":{}}')
case("mp_refined_in_object", '["object",{"arn":"string","id":"string"}]',
     mp(("arn", refined((1, False), (2, "arn:aws:"))), ("id", UNKNOWN)),
     '{"arn":{"$unknown":{"null":false,"prefix":"arn:aws:"}},"id":{"$unknown":{}}}')
case("mp_refined_trailing_bytes_allowed", '"string"', ext(12, enc(mp((1, False))) + b"\x00\x00"), '{"$unknown":{"null":false}}')

# ---- nested blocks (Schema.NestedBlock table), as their implied types ----
blk = '["object",{"name":"string","size":"number"}]'
one = mp(("name", "a"), ("size", 1))
two = mp(("name", "b"), ("size", 2))
case("mp_nesting_single", '["object",{"root_block":%s}]' % blk, mp(("root_block", one)), '{"root_block":{"name":"a","size":1}}')
case("mp_nesting_single_absent", '["object",{"root_block":%s}]' % blk, mp(("root_block", None)), '{"root_block":null}')
case("mp_nesting_group", '["object",{"timeouts":["object",{"create":"string","delete":"string"}]}]',
     mp(("timeouts", mp(("create", None), ("delete", None)))), '{"timeouts":{"create":null,"delete":null}}')
case("mp_nesting_list", '["object",{"disk":["list",%s]}]' % blk, mp(("disk", arr(one, two))),
     '{"disk":[{"name":"a","size":1},{"name":"b","size":2}]}')
case("mp_nesting_list_unknown_count", '["object",{"disk":["list",%s]}]' % blk, mp(("disk", UNKNOWN)), '{"disk":{"$unknown":{}}}')
case("mp_nesting_set", '["object",{"rule":["set",%s]}]' % blk, mp(("rule", arr(two, one))),
     '{"rule":[{"name":"b","size":2},{"name":"a","size":1}]}')
case("mp_nesting_map", '["object",{"env":["map",%s]}]' % blk, mp(("env", mp(("prod", one), ("dev", two)))),
     '{"env":{"prod":{"name":"a","size":1},"dev":{"name":"b","size":2}}}')
case("mp_nesting_deep", '["object",{"a":["list",["object",{"b":["set",["object",{"c":["map","string"]}]]}]]}]',
     mp(("a", arr(mp(("b", arr(mp(("c", mp(("k", "v")))))))))), '{"a":[{"b":[{"c":{"k":"v"}}]}]}')

# ---- malformed msgpack: a clean error naming the path --------------------
case("err_mp_truncated_string", '"string"', Raw(b"\xa5abc"), err=".: truncated msgpack data")
case("err_mp_truncated_in_object", '["object",{"a":"string","b":["list","number"]}]',
     Raw(enc(mp(("a", "x"), ("b", arr(1, 2, 3))))[:-1]), err=".b: truncated msgpack data")
case("err_mp_empty", '"string"', Raw(b""), err=".: empty msgpack payload")
case("err_mp_wrong_type", '["object",{"tags":["map","string"]}]', mp(("tags", mp(("x", 5)))),
     err='.tags["x"]: string is required')
case("err_mp_wrong_type_list", '["list","bool"]', arr(True, "no"), err=".[1]: bool is required")
case("err_mp_trailing", '"number"', Raw(enc(1) + b"\x01"), err=".: 1 trailing bytes after the value")
case("err_mp_bad_utf8", '["list","string"]', arr("ok", s(b"\xff\xfe")), err=".[1]: string is not valid utf-8")
case("err_mp_overlong_utf8", '"string"', s(b"\xc0\xaf"), err=".: string is not valid utf-8")
case("err_mp_surrogate_utf8", '"string"', s(b"\xed\xa0\x80"), err=".: string is not valid utf-8")
case("err_mp_nonstring_map_key", '["map","string"]', mp((1, "x")), err=".: map key is not a string")
case("err_mp_bad_utf8_map_key", '["map","string"]', mp((s(b"k\xff"), "x")), err='.["<invalid utf-8>"]: map key is not valid utf-8')
case("err_mp_duplicate_map_key", '["map","number"]', mp(("a", 1), ("a", 2)), err='.["a"]: duplicate map key')
case("err_mp_object_count", '["object",{"a":"string","b":"string"}]', mp(("a", "x")),
     err=".: an object with 2 attributes is required (1 given)")
case("err_mp_unsupported_attr", '["object",{"a":"string"}]', mp(("z", "x")), err=".z: unsupported attribute")
case("err_mp_duplicate_attr", '["object",{"a":"string","b":"string"}]', mp(("a", "x"), ("a", "y")), err=".a: duplicate attribute")
case("err_mp_tuple_length", '["tuple",["string","number"]]', arr("a"), err=".: a tuple of length 2 is required (1 given)")
case("err_mp_nan", '"number"', f64(float("nan")), err=".: number is NaN")
case("err_mp_number_string", '"number"', s("12abc"), err=".: number is required")
case("err_mp_number_binary_exponent", '"number"', s("1p3"), err=".: number is required")
case("err_mp_number_exponent_range", '"number"', s("9E23372036854775809"), err=".: number exponent out of range")
case("mp_number_string_exponent_8_digits", '"number"', s("1e-00012345678"), "1e-00012345678")
case("err_mp_refined_negative_length", '["list","string"]', refined((6, -1)),
     err=".: bad unknown value refinement: length bound is negative")
case("err_mp_dynamic_length", '"dynamic"', arr(binv('"string"')), err=".: dynamic value must be a two-element array")
case("err_mp_dynamic_bad_type", '"dynamic"', arr(binv('["lisst","string"]'), arr()),
     err=".: dynamic value type: invalid type: unknown type kind")
case("err_mp_refined_prefix_on_number", '"number"', refined((2, "x")),
     err=".: bad unknown value refinement: string prefix for a non-string type")
case("err_mp_refined_length_on_string", '"string"', refined((5, 1)),
     err=".: bad unknown value refinement: length bound for a non-collection type")
case("err_mp_refined_not_map", '"string"', ext(12, enc(arr(1, 2))), err=".: bad unknown value refinement: not a map")
case("err_mp_refined_oversize", '"string"', ext(12, enc(mp((2, "x" * 1100)))), err=".: unknown value refinements over 1024 bytes")
case("err_mp_huge_string_header", '"string"', Raw(b"\xdb\xff\xff\xff\xff" + b"abc"), err=".: truncated msgpack data")
case("err_mp_huge_array_header", '["list","string"]', Raw(b"\xdd\xff\xff\xff\xff\xa1a"), err=".: truncated msgpack data")
case("err_mp_huge_map_header", '["map","string"]', Raw(b"\xdf\x7f\xff\xff\xff\xa1a\xa1b"), err=".: truncated msgpack data")
case("err_mp_truncated_ext", '"string"', Raw(b"\xc7\x05\x0c\x81"), err=".: truncated msgpack data")
case("err_mp_invalid_byte", '"string"', Raw(b"\xc1"), err=".: string is required")
case("err_mp_depth_limit", '["list",["list","dynamic"]]',
     arr(arr(arr(binv('["list",["list",["list","string"]]]'), arr(arr(arr("deep")))))),
     err=".[0][0]: dynamic value type: type nested deeper than 2 levels", args="--max-depth 4")
case("err_mp_value_depth_limit", '["list","dynamic"]',
     arr(arr(binv('["list",["list",["list","string"]]]'), arr(arr(arr("deep"))))),
     err=".[0]: dynamic value type: type nested deeper than 3 levels", args="--max-depth 4")
case("mp_depth_at_limit", '["list","dynamic"]',
     arr(arr(binv('["list",["list","string"]]'), arr(arr("ok")))), '[{"type":["list",["list","string"]],"value":[["ok"]]}]',
     args="--max-depth 4")
case("err_mp_type_depth_limit", '["list",["list",["list","string"]]]', arr(), err=None,
     args="--max-depth 2", raw_err="tftap: --type: decode error at .: type nested deeper than 2 levels")

# ---- JSON encoding -------------------------------------------------------
case("js_string", '"string"', '"hello \\u00e9 \\ud83d\\ude00"', '"hello \u00e9 \U0001F600"')
case("js_string_from_number", '"string"', '12.50', '"12.50"')
case("js_string_from_bool", '"string"', 'true', '"true"')
case("js_number_int", '"number"', '42', "42")
case("js_number_big", '"number"', '123456789012345678901234567890', "123456789012345678901234567890")
case("js_number_precise", '"number"', '0.1000000000000000000000000001', "0.1000000000000000000000000001")
case("js_number_exponent", '"number"', '-1.5e-300', "-1.5e-300")
case("js_number_from_string", '"number"', '"0.1"', "0.1")
case("js_bool", '"bool"', 'false', "false")
case("js_bool_from_string", '"bool"', '"true"', "true")
case("js_list", '["list","number"]', '[1, 2 ,3]', "[1,2,3]")
case("js_set", '["set","string"]', '["b","a"]', '["b","a"]')
case("js_map", '["map","bool"]', '{"x": true, "y": false}', '{"x":true,"y":false}')
case("js_object", '["object",{"a":"string","b":["list","number"]}]', '{"b":[1],"a":"x"}', '{"b":[1],"a":"x"}')
case("js_object_missing_attrs_null", '["object",{"a":"string","b":"number","c":"bool"}]', '{"b":1}', '{"b":1,"a":null,"c":null}')
case("js_tuple", '["tuple",["string","bool"]]', '["a",true]', '["a",true]')
case("js_dynamic", '"dynamic"', '{"type":"string","value":"v"}', '{"type":"string","value":"v"}')
case("js_dynamic_value_first", '"dynamic"', '{"value":[1,2],"type":["list","number"]}', '{"type":["list","number"],"value":[1,2]}')
case("js_null", '["object",{"a":"string"}]', ' null ', "null")
case("js_nesting_modes", '["object",{"single":%s,"list":["list",%s],"set":["set",%s],"map":["map",%s]}]' % (blk, blk, blk, blk),
     '{"single":{"name":"a","size":1},"list":[{"name":"b","size":2}],"set":[],"map":{"k":{"name":"c","size":3}}}',
     '{"single":{"name":"a","size":1},"list":[{"name":"b","size":2}],"set":[],"map":{"k":{"name":"c","size":3}}}')
case("err_js_number_exponent_range", '["list","number"]', '[1, 2e1000000000]', err=".[1]: number exponent out of range")
case("err_js_trailing", '"number"', '1 2', err=".: trailing data after the value")
case("err_js_unsupported_attr", '["object",{"a":"string"}]', '{"a":"x","zz":1}', err=".zz: unsupported attribute")
case("err_js_wrong_type", '["map",["list","number"]]', '{"k":[1,"x"]}', err='.["k"][1]: a number is required')
case("err_js_bad_escape", '"string"', '"a\\qb"', err=".: bad escape in string")
case("err_js_lone_surrogate", '"string"', '"\\ud800x"', err=".: unpaired surrogate in string")
case("err_js_bad_utf8", '"string"', JsonBytes(b'"\xff"'), err=".: string is not valid utf-8")
case("err_js_leading_zero", '"number"', '01', err=".: invalid JSON number")
case("err_js_truncated", '["list","string"]', '["a",', err=".[1]: unexpected end of JSON")
case("err_js_tuple_long", '["tuple",["string"]]', '["a","b"]', err=".[1]: too many tuple elements")
case("err_js_dynamic_missing_type", '"dynamic"', '{"value":1}', err=".: missing type in dynamically-typed value")
case("err_js_duplicate_map_key", '["map","number"]', '{"a":1,"a":2}', err='.["a"]: duplicate map key')
# ---- a payload for `tftap decode --schema` (tests/decoder/decode_schema.sh) ----
thing = mp(
    ("bool_attr", True),
    ("dynamic_attr", arr(binv('["list","number"]'), arr(1, 2))),
    ("fail", None),
    ("float_attr", f64(1.5)),
    ("id", UNKNOWN),
    ("int_attr", 42),
    ("list_attr", arr("a", "b")),
    ("map_attr", mp(("x", 1))),
    ("number_attr", s("0.1")),
    ("object_attr", mp(("count", 2), ("name", "n"), ("tags", arr("t")))),
    ("rule", arr(mp(("name", "ssh"), ("port", 22)))),
    ("secret", "hunter2"),
    ("set_attr", arr("s")),
    ("settings", mp(("enabled", False), ("level", refined((1, False), (2, "lv-"))))),
    ("string_attr", "hello"),
)
open(os.path.join(here, "schema", "thing.msgpack"), "wb").write(enc(thing))
print("golden vectors written")
