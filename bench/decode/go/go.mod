module tftap/decodebench

go 1.25

require (
	github.com/zclconf/go-cty v1.19.0
	tftap/crosscheck v0.0.0
)

require (
	github.com/apparentlymart/go-textseg/v15 v15.0.0 // indirect
	github.com/apparentlymart/go-textseg/v17 v17.0.1 // indirect
	github.com/vmihailenco/msgpack/v5 v5.3.5 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	golang.org/x/text v0.11.0 // indirect
)

// The contract renderer is shared with the go-cty cross-check.
replace tftap/crosscheck => ../../../tests/crosscheck/go
