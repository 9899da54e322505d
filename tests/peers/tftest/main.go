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
	"strings"

	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov5/tf5server"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

var (
	typeName = "tftest6"
	protocol = "6"
	version  = "0.1.0"
	// namespace is where the binary is published in the filesystem mirror.
	namespace = "tftap"
)

// The go-plugin handshake every Terraform/OpenTofu provider shares.
const cookieKey = "TF_PLUGIN_MAGIC_COOKIE"
const cookieValue = "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2"

func main() {
	proto, err := strconv.Atoi(protocol)
	if err != nil || (proto != 5 && proto != 6) {
		fmt.Fprintf(os.Stderr, "tftest: bad protocol %q\n", protocol)
		os.Exit(2)
	}
	addr := "registry.opentofu.org/" + namespace + "/" + typeName
	p := newProvider(typeName, proto)()

	// Served through go-plugin directly (what providerserver.Serve does)
	// so that every gRPC call can be logged on the provider's side: the
	// end-to-end tests compare that log with what tftap recorded.
	var grpcPlugin plugin.Plugin
	if proto == 5 {
		grpcPlugin = &tf5server.GRPCProviderPlugin{Name: addr, GRPCProvider: misbehave5(providerserver.NewProtocol5(p))}
	} else {
		grpcPlugin = &tf6server.GRPCProviderPlugin{Name: addr, GRPCProvider: misbehave6(providerserver.NewProtocol6(p))}
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: plugin.HandshakeConfig{
			ProtocolVersion:  uint(proto),
			MagicCookieKey:   cookieKey,
			MagicCookieValue: cookieValue,
		},
		Plugins: plugin.PluginSet{"provider": grpcPlugin},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			opts = append(opts, grpc.MaxRecvMsgSize(256<<20), grpc.MaxSendMsgSize(256<<20),
				grpc.ChainUnaryInterceptor(logUnary), grpc.ChainStreamInterceptor(logStream))
			return grpc.NewServer(opts...)
		},
	})
}

// With TFTEST_RPC_LOG set, each call the provider receives appends lines
// (tab-separated) to that file:
//
//	begin  PID  /full.Method  REQUEST_BYTES  PARENT
//	end    PID  /full.Method  GRPC_CODE  RESPONSE_BYTES  PARENT
//	stream PID  /full.Method  PARENT
//
// PARENT is the name of the process that started the provider (tftap for a
// wrapped provider, tofu or terraform for a direct one). "begin" is written
// before the call runs, so a call the provider dies in is still logged.
func rpcLog(format string, args ...any) {
	path := os.Getenv("TFTEST_RPC_LOG")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = fmt.Fprintf(f, format, args...)
}

var parentName = func() string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", os.Getppid()))
	if err != nil || len(b) == 0 {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}()

func msgSize(m any) int {
	if pm, ok := m.(proto.Message); ok && pm != nil {
		return proto.Size(pm)
	}
	return 0
}

func logUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	rpcLog("begin\t%d\t%s\t%d\t%s\n", os.Getpid(), info.FullMethod, msgSize(req), parentName)
	resp, err := handler(ctx, req)
	size := 0
	if err == nil {
		size = msgSize(resp)
	}
	rpcLog("end\t%d\t%s\t%d\t%d\t%s\n", os.Getpid(), info.FullMethod, status.Code(err), size, parentName)
	return resp, err
}

func logStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	rpcLog("stream\t%d\t%s\t%s\n", os.Getpid(), info.FullMethod, parentName)
	return handler(srv, ss)
}
