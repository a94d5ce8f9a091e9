package replica

import (
	"io"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/replica/logging"
)

// LogFileName is the server's log file inside the logging directory.
const LogFileName = logging.FileName

// NewLogger builds the server logger from [logging] (package logging):
// level directives per target, stdout, and with file_enabled the rotated
// JSON file under <path>/<logging.path> with its size and age limits.
func NewLogger(cfg *config.Config, stdout io.Writer) (*zap.Logger, func(), error) {
	l := cfg.Logging
	o := logging.Options{Level: l.Level, Stdout: stdout}
	if l.FileEnabled {
		o.Dir = cfg.LogDir()
		o.File = logging.FileOptions{MaxSize: l.MaxFileSize.Bytes(), MaxTotal: l.MaxTotalSize.Bytes(), Retention: l.Retention.Duration}
		o.CheckInterval = l.RotationCheckInterval.Duration
	}
	lg, err := logging.New(o)
	if err != nil {
		return nil, nil, err
	}
	return lg.Logger, lg.Close, nil
}
