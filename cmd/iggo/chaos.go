package main

import (
	"github.com/spf13/cobra"

	"github.com/iggo/iggo/cmd/iggo/internal/cli"
	"github.com/iggo/iggo/tests/chaos"
)

// `iggo chaos run|check`: the chaos runner and history checker of
// tests/chaos (the one package under tests/ production code may import).
func init() {
	cli.Register(cli.Extension{New: func(*cli.Env) *cobra.Command { return chaos.Command() }})
}
