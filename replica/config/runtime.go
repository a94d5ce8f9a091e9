package config

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"

	"github.com/pelletier/go-toml/v2"
)

// RuntimeFileName is the file WriteRuntime writes inside the runtime
// directory.
const RuntimeFileName = "current_config.toml"

// Bound lists the addresses the listeners actually bound (after port 0 was
// resolved by the kernel); empty means that listener is not running.
type Bound struct {
	TCP        string
	QUIC       string
	HTTP       string
	WebSocket  string
	TCPReplica string
	Gossip     string
	// MetricsOpen is the bound http.metrics.open_address.
	MetricsOpen string
	// ReplicaID selects this node's roster entry when clustering is on;
	// its ports are rewritten from the bound addresses.
	ReplicaID int
}

// WriteRuntime deletes and recreates dir (normally cfg.RuntimeDir()) and
// writes dir/current_config.toml: the effective configuration with the bound
// addresses substituted and every secret left out. Test harnesses read it to
// learn OS-assigned ports. The file and the directory are fsynced.
//
// This is configuration I/O at boot, not storage I/O, so it uses package os
// directly rather than shard/vfs; nothing durable depends on it (it is
// rewritten at every start).
func WriteRuntime(dir string, cfg *Config, bound Bound) (string, error) {
	clean := filepath.Clean(dir)
	if dir == "" || clean == "." || clean == string(filepath.Separator) || clean == filepath.Clean(cfg.Path) {
		return "", fmt.Errorf("config: refusing to recreate runtime directory %q", dir)
	}
	out, err := runtimeView(cfg, bound)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	buf.WriteString("# Effective configuration of the running server, written at start.\n")
	buf.WriteString("# Addresses are the ones actually bound; secrets are omitted.\n")
	enc := toml.NewEncoder(&buf)
	if err := enc.Encode(out); err != nil {
		return "", fmt.Errorf("config: encoding runtime config: %w", err)
	}
	if err := os.RemoveAll(clean); err != nil {
		return "", fmt.Errorf("config: clearing %s: %w", clean, err)
	}
	if err := os.MkdirAll(clean, 0o755); err != nil {
		return "", fmt.Errorf("config: creating %s: %w", clean, err)
	}
	path := filepath.Join(clean, RuntimeFileName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	_, werr := f.Write(buf.Bytes())
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return "", fmt.Errorf("config: writing %s: %w", path, err)
	}
	if d, err := os.Open(clean); err == nil {
		serr := d.Sync()
		cerr := d.Close()
		if err := errors.Join(serr, cerr); err != nil {
			return "", fmt.Errorf("config: syncing %s: %w", clean, err)
		}
	}
	return path, nil
}

// runtimeView copies cfg, substitutes bound addresses and clears secrets.
func runtimeView(cfg *Config, bound Bound) (*Config, error) {
	out := *cfg
	out.Cluster.Nodes = make([]ClusterNode, len(cfg.Cluster.Nodes))
	copy(out.Cluster.Nodes, cfg.Cluster.Nodes)
	if bound.TCP != "" {
		out.TCP.Address = bound.TCP
	}
	if bound.QUIC != "" {
		out.QUIC.Address = bound.QUIC
	}
	if bound.HTTP != "" {
		out.HTTP.Address = bound.HTTP
	}
	if bound.MetricsOpen != "" {
		out.HTTP.Metrics.OpenAddress = bound.MetricsOpen
	}
	if bound.WebSocket != "" {
		out.WebSocket.Address = bound.WebSocket
	}
	if cfg.Cluster.Enabled {
		idx := -1
		for i, n := range out.Cluster.Nodes {
			if n.ReplicaID == bound.ReplicaID {
				idx = i
			}
		}
		if idx < 0 {
			return nil, fmt.Errorf("config: replica id %d is not in the roster", bound.ReplicaID)
		}
		ports := out.Cluster.Nodes[idx].Ports
		for _, b := range []struct {
			addr string
			dst  **uint16
		}{{bound.TCP, &ports.TCP}, {bound.QUIC, &ports.QUIC}, {bound.HTTP, &ports.HTTP}, {bound.WebSocket, &ports.WebSocket}, {bound.TCPReplica, &ports.TCPReplica}, {bound.Gossip, &ports.Gossip}} {
			if b.addr == "" {
				continue
			}
			_, p, err := net.SplitHostPort(b.addr)
			if err != nil {
				return nil, fmt.Errorf("config: bound address %q: %w", b.addr, err)
			}
			n, err := strconv.ParseUint(p, 10, 16)
			if err != nil {
				return nil, fmt.Errorf("config: bound address %q: bad port", b.addr)
			}
			*b.dst = Port(uint16(n))
		}
		out.Cluster.Nodes[idx].Ports = ports
	}
	clearSecrets(reflect.ValueOf(&out).Elem())
	return &out, nil
}

// clearSecrets zeroes every field tagged secret:"true", wherever it sits.
// The copy in runtimeView shares nothing the walk writes to: secrets live in
// value-typed structs, never behind slices or pointers.
func clearSecrets(v reflect.Value) {
	if v.Kind() != reflect.Struct {
		return
	}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Tag.Get("secret") == "true" {
			v.Field(i).SetZero()
			continue
		}
		if f.Type.Kind() == reflect.Struct {
			clearSecrets(v.Field(i))
		}
	}
}
