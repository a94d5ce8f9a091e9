package replica

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/replica/datadir"
	"github.com/iggo/iggo/shard/vfs"
)

// LockDataDir takes the exclusive lock of cfg.Path for this process as
// replica replicaID (package datadir). cmd/iggo-server calls it before it
// opens the log file, which lives under the data directory; Start takes it
// itself when Options.DataDir is nil.
func LockDataDir(cfg *config.Config, replicaID int) (*datadir.Lock, error) {
	node := "single node"
	if cfg.Cluster.Enabled {
		node = fmt.Sprintf("replica %d", replicaID)
		if m, err := clusterMember(cfg, replicaID); err == nil {
			node = m.Name
		}
	}
	return datadir.Acquire(cfg.Path, datadir.Owner{PID: os.Getpid(), Node: node, ReplicaID: replicaID, Started: time.Now()})
}

// CheckFresh refuses --fresh on a directory that does not look like an
// iggo data directory (datadir.CheckWipe), before anything is removed.
func CheckFresh(cfg *config.Config) error { return datadir.CheckWipe(vfs.NewOS(), dataLayout(cfg)) }

// dataLayout is what a node keeps at the top of its data directory (see
// "Data directory" in the package doc). --fresh keeps the lock file and
// the log directory, so the log of the run that wiped survives.
func dataLayout(cfg *config.Config) datadir.Layout {
	l := datadir.Layout{Path: cfg.Path, Entries: []string{"metadata", "streams", "state", quarantineDir,
		KeyCheckFile, KeyCheckFile + ".tmp"}}
	if top := datadir.TopEntry(cfg.Runtime.Path); top != "" {
		l.Entries = append(l.Entries, top)
	}
	if rel, err := filepath.Rel(cfg.Path, cfg.LogDir()); err == nil {
		switch top := datadir.TopEntry(rel); {
		case filepath.Clean(rel) == ".":
			l.Keep = append(l.Keep, LogFileName+"*")
		case top != "":
			l.Entries = append(l.Entries, top)
			l.Keep = append(l.Keep, filepath.Clean(rel))
		}
	}
	return l
}

// bindListeners binds the client listener and, in cluster mode, builds
// the replica plane and binds its listener, before Start reads the data
// directory: a start that cannot bind its ports fails without touching
// storage. Accepting starts once recovery is done (serve, plane.Start);
// until then connections wait in the listen backlog.
func (n *Node) bindListeners() error {
	if err := n.bindClientListeners(); err != nil {
		return err
	}
	if err := n.bindQUIC(); err != nil {
		n.closeClientListeners()
		return err
	}
	if err := n.bindHTTP(); err != nil {
		n.closeClientListeners()
		return err
	}
	if !n.clustered() {
		return nil
	}
	if err := n.newPlane(); err != nil {
		n.closeHTTPListeners()
		n.closeClientListeners()
		return err
	}
	if err := n.plane.Bind(); err != nil {
		_ = n.plane.Close()
		n.closeHTTPListeners()
		n.closeClientListeners()
		return err
	}
	return nil
}

// releaseDataDir drops the data directory lock (Close, a failed Start).
func (n *Node) releaseDataDir() {
	if n.dirLock != nil {
		_ = n.dirLock.Release()
	}
}
