package datadir

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// LockFileName is the lock file inside the data directory.
const LockFileName = "iggo.lock"

const lockHeader = "iggo data directory lock"

// Owner is who holds a data directory.
type Owner struct {
	PID       int
	Node      string
	ReplicaID int
	Started   time.Time
}

func (o Owner) encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\npid=%d\nnode=%s\nreplica_id=%d\nstarted=%s\n", lockHeader, o.PID, o.Node, o.ReplicaID,
		o.Started.UTC().Format(time.RFC3339Nano))
	return b.Bytes()
}

// decodeOwner parses a lock file; ok is false unless it holds at least the
// header and a positive pid.
func decodeOwner(b []byte) (o Owner, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	if !sc.Scan() || sc.Text() != lockHeader {
		return Owner{}, false
	}
	for sc.Scan() {
		k, v, found := strings.Cut(sc.Text(), "=")
		if !found {
			continue
		}
		switch k {
		case "pid":
			o.PID, _ = strconv.Atoi(v)
		case "node":
			o.Node = v
		case "replica_id":
			o.ReplicaID, _ = strconv.Atoi(v)
		case "started":
			o.Started, _ = time.Parse(time.RFC3339Nano, v)
		}
	}
	return o, o.PID > 0
}

// InUseError is the refusal of a data directory another process holds.
// Owner is what its lock file says (zero when it could not be read).
type InUseError struct {
	Path  string
	Owner Owner
}

func (e *InUseError) Error() string {
	if e.Owner.PID <= 0 {
		return fmt.Sprintf("data directory %s is in use by another process (it holds %s)", e.Path,
			filepath.Join(e.Path, LockFileName))
	}
	s := fmt.Sprintf("data directory %s is in use by pid %d", e.Path, e.Owner.PID)
	var more []string
	if e.Owner.Node != "" {
		more = append(more, e.Owner.Node)
	}
	if !e.Owner.Started.IsZero() {
		more = append(more, "started "+e.Owner.Started.UTC().Format(time.RFC3339))
	}
	if len(more) > 0 {
		s += " (" + strings.Join(more, ", ") + ")"
	}
	return s
}

// Lock is a held data directory lock.
type Lock struct {
	path  string
	f     *os.File
	owner Owner
}

// Acquire creates path if it is missing and takes its lock for owner,
// without waiting: a directory another process (or another Lock in this
// process) holds is refused with an *InUseError.
func Acquire(path string, owner Owner) (*Lock, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("datadir: creating %s: %w", path, err)
	}
	name := filepath.Join(path, LockFileName)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("datadir: opening %s: %w", name, err)
	}
	if err := flock(f); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &InUseError{Path: path, Owner: readOwner(name)}
		}
		return nil, fmt.Errorf("datadir: locking %s: %w", name, err)
	}
	b := owner.encode()
	if err := f.Truncate(0); err == nil {
		if _, err = f.WriteAt(b, 0); err == nil {
			err = f.Sync()
		}
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("datadir: writing %s: %w", name, err)
		}
	} else {
		_ = f.Close()
		return nil, fmt.Errorf("datadir: truncating %s: %w", name, err)
	}
	return &Lock{path: path, f: f, owner: owner}, nil
}

func flock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB)
			if !errors.Is(ferr, unix.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}

// readOwner reads the lock file of a held directory. The owner truncates
// and rewrites it right after taking the lock, so an empty or partial file
// is read again for a little while.
func readOwner(name string) Owner {
	for i := 0; i < 50; i++ {
		if b, err := os.ReadFile(name); err == nil {
			if o, ok := decodeOwner(b); ok {
				return o
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return Owner{}
}

// ReadOwner returns what the lock file of path says about its last owner
// (held or not); ok is false when there is no readable lock file.
func ReadOwner(path string) (Owner, bool) {
	b, err := os.ReadFile(filepath.Join(path, LockFileName))
	if err != nil {
		return Owner{}, false
	}
	return decodeOwner(b)
}

// Path is the locked directory.
func (l *Lock) Path() string { return l.path }

// File is the lock file's path.
func (l *Lock) File() string { return filepath.Join(l.path, LockFileName) }

// Owner is what the lock file says.
func (l *Lock) Owner() Owner { return l.owner }

// Release drops the lock (closing the file releases the flock). The file
// stays, naming its last owner. Safe to call more than once.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
