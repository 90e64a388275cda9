package main

import (
	"context"
	"errors"
	"flag"
	"io"

	"github.com/askwp/askwpd/api"
)

// cmdMCP serves the tools over MCP on stdin and stdout, for desktop MCP
// clients that start a command. It opens the store and the site as serve
// does, without the HTTP listener or the schedule. Logs go to stderr:
// stdout carries the protocol.
func cmdMCP(ctx context.Context, args []string, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	var c common
	c.register(fs)
	stdio := fs.Bool("stdio", false, "serve MCP on stdin/stdout (the only transport here; /mcp on serve's listener is the HTTP one)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if !*stdio {
		return &exitError{2, errors.New("mcp: want --stdio (HTTP clients use /mcp on askwpd serve)")}
	}
	d, err := openDaemon(ctx, &c, stderr, "warn", true)
	if err != nil {
		return err
	}
	defer d.Close()
	err = api.ServeMCP(ctx, d, api.MCPOptions{Log: d.Log, Pages: d.Store}, stdin, stdout)
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
