// Package deps pins the third-party modules the project builds on so that
// go.mod and go.sum carry them before every package imports them directly.
// It is removed once each module has a real importer.
package deps

import (
	_ "github.com/HdrHistogram/hdrhistogram-go"
	_ "github.com/anishathalye/porcupine"
	_ "github.com/hashicorp/memberlist"
	_ "github.com/pawelgaczynski/giouring"
	_ "github.com/pelletier/go-toml/v2"
	_ "github.com/spaolacci/murmur3"
	_ "github.com/spf13/cobra"
	_ "github.com/vbauerster/mpb/v8"
	_ "github.com/zeebo/xxh3"
	_ "go.uber.org/zap"
	_ "golang.org/x/crypto/argon2"
	_ "golang.org/x/sys/unix"
	_ "gonum.org/v1/plot"
	_ "pgregory.net/rapid"
)
