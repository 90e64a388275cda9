package main

import (
	"context"
	"flag"
	"fmt"
)

func runLatency(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("latency", flag.ExitOnError)
	fs.Parse(args)
	return fmt.Errorf("not yet")
}
