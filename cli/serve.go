package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/locktorture/locktorture/report"
)

// cmdServe serves a results folder (default results/) on 127.0.0.1 until
// Ctrl-C or SIGTERM: the index of every run and matrix under it, each
// report and history (report.Server does the work).
func cmdServe(args []string, stdout, stderr io.Writer) int {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	return serve(ctx, args, stdout, stderr)
}

// serve is cmdServe until ctx ends.
func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("serve", stderr)
	port := fs.Int("port", 8080, "TCP port to listen on (0: any free port)")
	addr := fs.String("addr", "127.0.0.1", "IP address to listen on; one that is not loopback needs --public")
	public := fs.Bool("public", false, "allow --addr to be an address other machines can reach: anyone who can reach it reads every run")
	dir, help, err := parseServeArgs(fs, args, stdout)
	if code, stop := parseStop(help, err, "serve", stderr); stop {
		return code
	}
	host, err := listenHost(*addr, *public)
	if err != nil {
		return fail(stderr, fmt.Errorf("serve: %v", err))
	}
	if *port < 0 || *port > 65535 {
		return fail(stderr, fmt.Errorf("serve: --port %d: want 0 to 65535", *port))
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fail(stderr, fmt.Errorf("serve: %s: not a folder (want a results folder, e.g. results/)", dir))
	}
	srv, err := report.NewServer(dir)
	if err != nil {
		return fail(stderr, fmt.Errorf("serve: %v", err))
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(*port)))
	if err != nil {
		return fail(stderr, fmt.Errorf("serve: listen: %v", err))
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	fmt.Fprintf(stdout, "serving %s at http://%s/ (Ctrl-C stops)\n", dir, ln.Addr())
	select {
	case err = <-done:
	case <-ctx.Done():
		sctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
		defer stop()
		err = hs.Shutdown(sctx)
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fail(stderr, fmt.Errorf("serve: %v", err))
	}
	return exitValid
}

// parseServeArgs parses flags around at most one folder (default results/).
func parseServeArgs(fs *flag.FlagSet, args []string, stdout io.Writer) (string, bool, error) {
	dirs, help, err := parsePositional(fs, args, stdout, "usage: torture serve [flags] [DIR]   (DIR defaults to results/)")
	if help || err != nil {
		return "", help, err
	}
	switch len(dirs) {
	case 0:
		return "results", false, nil
	case 1:
		return dirs[0], false, nil
	}
	return "", false, fmt.Errorf("want at most one folder, got %d", len(dirs))
}

// listenHost checks --addr: an IP address (or localhost), loopback unless
// public says the user means to open the pages to the network.
func listenHost(addr string, public bool) (string, error) {
	if addr == "localhost" {
		return "127.0.0.1", nil
	}
	ip := net.ParseIP(addr)
	if ip == nil {
		return "", fmt.Errorf("--addr %q: want an IP address such as 127.0.0.1", addr)
	}
	if !ip.IsLoopback() && !public {
		return "", fmt.Errorf("--addr %s is not a loopback address: every run would be readable from the network; add --public to mean it", addr)
	}
	return ip.String(), nil
}
