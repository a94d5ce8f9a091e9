package main

import (
	"github.com/spf13/cobra"

	"github.com/iggo/iggo/cmd/iggo/internal/cli"
	"github.com/iggo/iggo/internal/chaos"
)

// `iggo chaos run|check`: the chaos runner and history checker
// (internal/chaos).
func init() {
	cli.Register(cli.Extension{New: func(*cli.Env) *cobra.Command { return chaos.Command() }})
}
