// coreprobe starts a provider the way Terraform and OpenTofu do (go-plugin's
// client: handshake, AutoMTLS, gRPC) and calls the methods named on its
// command line with empty requests, printing "METHOD STATUS" for each.
//
// OpenTofu v1.10 never calls the methods newer cores ask every provider at
// start (GetResourceIdentitySchemas since Terraform v1.12, GetMetadata), so
// the end-to-end tests use this to make a provider built before them answer
// as it does there: UNIMPLEMENTED.
//
// Usage: coreprobe PROTOCOL PROVIDER_EXECUTABLE METHOD...
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// Every tfplugin request these methods take is an empty message, and any
// answer decodes as Empty with its fields kept unknown.
type rawPlugin struct{ plugin.Plugin }

func (rawPlugin) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error { return nil }

func (rawPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (interface{}, error) {
	return c, nil
}

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: coreprobe PROTOCOL PROVIDER_EXECUTABLE METHOD...")
		os.Exit(2)
	}
	proto, err := strconv.Atoi(os.Args[1])
	if err != nil || (proto != 5 && proto != 6) {
		fmt.Fprintln(os.Stderr, "coreprobe: PROTOCOL is 5 or 6")
		os.Exit(2)
	}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: plugin.HandshakeConfig{
			ProtocolVersion:  uint(proto),
			MagicCookieKey:   "TF_PLUGIN_MAGIC_COOKIE",
			MagicCookieValue: "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2",
		},
		Plugins:          map[string]plugin.Plugin{"provider": rawPlugin{}},
		Cmd:              exec.Command(os.Args[2]),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		Logger:           hclog.NewNullLogger(),
	})
	defer client.Kill()
	rpc, err := client.Client()
	if err != nil {
		fmt.Fprintln(os.Stderr, "coreprobe:", err)
		os.Exit(1)
	}
	raw, err := rpc.Dispense("provider")
	if err != nil {
		fmt.Fprintln(os.Stderr, "coreprobe:", err)
		os.Exit(1)
	}
	conn := raw.(*grpc.ClientConn)
	for _, m := range os.Args[3:] {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := conn.Invoke(ctx, fmt.Sprintf("/tfplugin%d.Provider/%s", proto, m), &emptypb.Empty{}, &emptypb.Empty{})
		cancel()
		fmt.Printf("%s %s\n", m, status.Code(err))
	}
}
