// Command iggo-chaos is the chaos runner on its own, so `make chaos`
// builds only the runner; it is the same command as `iggo chaos`.
package main

import (
	"os"

	"github.com/iggo/iggo/internal/chaos"
)

func main() {
	cmd := chaos.Command()
	cmd.Use = "iggo-chaos"
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}
