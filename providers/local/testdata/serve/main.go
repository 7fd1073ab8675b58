// Command serve is a stand-in for `benchflow serve` that the local
// provider's tests build when cmd/benchflow does not compile: the same
// engine/serve server behind the flags the tests use.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/benchflow/benchflow/engine/serve"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "serve" {
		fmt.Fprintln(os.Stderr, "usage: serve serve --addr HOST:PORT --size N")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	addr := fs.String("addr", serve.DefaultAddr, "listen address")
	size := fs.String("size", "6", "body size")
	fs.Parse(os.Args[2:])
	n, err := serve.ParseSize(*size)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = serve.ListenAndServe(ctx, serve.Config{Addr: *addr, Size: n, Ready: func(a net.Addr) {
		fmt.Printf("listening on http://%s\n", a)
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
