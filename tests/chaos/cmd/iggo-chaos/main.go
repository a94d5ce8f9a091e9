// Command iggo-chaos is the chaos runner on its own, for `make chaos`
// while the iggo CLI does not register it; it is the same command as
// `iggo chaos`.
package main

import (
	"os"

	"github.com/iggo/iggo/tests/chaos"
)

func main() {
	cmd := chaos.Command()
	cmd.Use = "iggo-chaos"
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}
