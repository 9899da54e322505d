// Command tftest is tftap's own test provider: a real go-plugin gRPC
// provider built on terraform-plugin-framework, used by the end-to-end tests
// and the demo in place of public providers the build machine cannot fetch.
//
// One source builds two binaries: the type name and the plugin protocol
// (5 or 6) are fixed at link time with -ldflags "-X main.typeName=... -X
// main.protocol=...", so tftest5 speaks tfplugin5 and tftest6 tfplugin6 with
// the same resources. Resources cover what the recorder must decode: random
// computed values (like random_pet/random_id), replace-forcing maps (like
// null_resource triggers), every primitive and collection type, nested
// blocks, protocol-6 nested attributes, sensitive values, dynamic values,
// a provider function, and a "fail" knob that makes the provider answer an
// error, panic, or kill itself in the middle of an apply.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
)

var (
	typeName = "tftest6"
	protocol = "6"
	version  = "0.1.0"
	// namespace is where the binary is published in the filesystem mirror.
	namespace = "tftap"
)

func main() {
	proto, err := strconv.Atoi(protocol)
	if err != nil || (proto != 5 && proto != 6) {
		fmt.Fprintf(os.Stderr, "tftest: bad protocol %q\n", protocol)
		os.Exit(2)
	}
	err = providerserver.Serve(context.Background(), newProvider(typeName, proto), providerserver.ServeOpts{
		Address:         "registry.opentofu.org/" + namespace + "/" + typeName,
		ProtocolVersion: proto,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "tftest:", err)
		os.Exit(1)
	}
}
