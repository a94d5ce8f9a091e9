package main

import (
	"github.com/iggo/iggo/cmd/iggo/internal/cli"
	"github.com/iggo/iggo/cmd/iggo/internal/localcluster"
)

// `iggo cluster up|status|down`: a local cluster of background iggo-server
// processes, next to `iggo cluster metadata`.
func init() {
	cli.Register(localcluster.Extensions()...)
}
