package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// The CLI keeps three small TOML files in its config directory:
//
//	contexts.toml   named contexts: [contexts.NAME] with the connection keys
//	                of ContextConfig
//	active_context  the name of the context in use (absent: "default")
//	secrets.toml    login sessions ([sessions] address = token) and tokens
//	                stored by `pat create --store-token`
//	                ([tokens."address"] name = token); mode 0600
//
// The directory is $IGGO_HOME if set, else $XDG_CONFIG_HOME/iggo if
// XDG_CONFIG_HOME is set, else ~/.iggo.

// DefaultContext is the implicit context: the built-in defaults.
const DefaultContext = "default"

// ContextConfig is one named context: defaults for the global flags.
type ContextConfig struct {
	TCPServerAddress string `toml:"tcp_server_address,omitempty" json:"tcp_server_address,omitempty"`
	Username         string `toml:"username,omitempty" json:"username,omitempty"`
	Password         string `toml:"password,omitempty" json:"password,omitempty"`
	Token            string `toml:"token,omitempty" json:"token,omitempty"`
	TokenName        string `toml:"token_name,omitempty" json:"token_name,omitempty"`
	TLSEnabled       bool   `toml:"tcp_tls_enabled,omitempty" json:"tcp_tls_enabled,omitempty"`
	TLSDomain        string `toml:"tcp_tls_domain,omitempty" json:"tcp_tls_domain,omitempty"`
	TLSCAFile        string `toml:"tcp_tls_ca_file,omitempty" json:"tcp_tls_ca_file,omitempty"`
}

type contextsFile struct {
	Contexts map[string]ContextConfig `toml:"contexts"`
}

type secretsFile struct {
	Sessions map[string]string            `toml:"sessions,omitempty"`
	Tokens   map[string]map[string]string `toml:"tokens,omitempty"`
}

// ConfigDir is the CLI's configuration directory.
type ConfigDir struct{ Path string }

// configDir resolves the directory from the environment.
func configDir(getenv func(string) string) (ConfigDir, error) {
	if p := getenv("IGGO_HOME"); p != "" {
		return ConfigDir{Path: p}, nil
	}
	if p := getenv("XDG_CONFIG_HOME"); p != "" {
		return ConfigDir{Path: filepath.Join(p, "iggo")}, nil
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return ConfigDir{}, localErr("cannot find a config directory: set IGGO_HOME or HOME")
		}
		home = h
	}
	return ConfigDir{Path: filepath.Join(home, ".iggo")}, nil
}

func (d ConfigDir) file(name string) string { return filepath.Join(d.Path, name) }

func (d ConfigDir) readTOML(name string, v any) error {
	b, err := os.ReadFile(d.file(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return localErr("read %s: %v", d.file(name), err)
	}
	if err := toml.Unmarshal(b, v); err != nil {
		return localErr("parse %s: %v; fix or delete the file", d.file(name), err)
	}
	return nil
}

// writeFile replaces name atomically (temp file + rename) with mode perm.
func (d ConfigDir) writeFile(name string, b []byte, perm os.FileMode) error {
	if err := os.MkdirAll(d.Path, 0o700); err != nil {
		return localErr("create config directory %s: %v", d.Path, err)
	}
	tmp, err := os.CreateTemp(d.Path, "."+name+".*")
	if err != nil {
		return localErr("write %s: %v", d.file(name), err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return localErr("write %s: %v", d.file(name), err)
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return localErr("chmod %s: %v", d.file(name), err)
	}
	if err := tmp.Close(); err != nil {
		return localErr("write %s: %v", d.file(name), err)
	}
	if err := os.Rename(tmp.Name(), d.file(name)); err != nil {
		return localErr("write %s: %v", d.file(name), err)
	}
	return nil
}

func (d ConfigDir) writeTOML(name string, v any, perm os.FileMode) error {
	b, err := toml.Marshal(v)
	if err != nil {
		return localErr("encode %s: %v", name, err)
	}
	return d.writeFile(name, b, perm)
}

// Contexts returns every stored context plus the implicit default.
func (d ConfigDir) Contexts() (map[string]ContextConfig, error) {
	var f contextsFile
	if err := d.readTOML("contexts.toml", &f); err != nil {
		return nil, err
	}
	if f.Contexts == nil {
		f.Contexts = map[string]ContextConfig{}
	}
	if _, ok := f.Contexts[DefaultContext]; !ok {
		f.Contexts[DefaultContext] = ContextConfig{}
	}
	return f.Contexts, nil
}

// SaveContexts writes the contexts (the default one only if customised).
func (d ConfigDir) SaveContexts(m map[string]ContextConfig) error {
	out := contextsFile{Contexts: map[string]ContextConfig{}}
	for k, v := range m {
		if k == DefaultContext && v == (ContextConfig{}) {
			continue
		}
		out.Contexts[k] = v
	}
	return d.writeTOML("contexts.toml", out, 0o600)
}

// ActiveContext is the name in active_context, or "default".
func (d ConfigDir) ActiveContext() (string, error) {
	b, err := os.ReadFile(d.file("active_context"))
	if errors.Is(err, fs.ErrNotExist) {
		return DefaultContext, nil
	}
	if err != nil {
		return "", localErr("read %s: %v", d.file("active_context"), err)
	}
	name := strings.TrimSpace(string(b))
	if name == "" {
		return DefaultContext, nil
	}
	return name, nil
}

// SetActiveContext records name as the context in use.
func (d ConfigDir) SetActiveContext(name string) error {
	return d.writeFile("active_context", []byte(name+"\n"), 0o600)
}

func (d ConfigDir) secrets() (secretsFile, error) {
	var f secretsFile
	err := d.readTOML("secrets.toml", &f)
	if f.Sessions == nil {
		f.Sessions = map[string]string{}
	}
	if f.Tokens == nil {
		f.Tokens = map[string]map[string]string{}
	}
	return f, err
}

// Session returns the login-session token stored for a server address.
func (d ConfigDir) Session(addr string) (string, bool, error) {
	f, err := d.secrets()
	if err != nil {
		return "", false, err
	}
	t, ok := f.Sessions[addr]
	return t, ok, nil
}

// SetSession stores (token != "") or removes (token == "") a session.
func (d ConfigDir) SetSession(addr, token string) error {
	f, err := d.secrets()
	if err != nil {
		return err
	}
	if token == "" {
		delete(f.Sessions, addr)
	} else {
		f.Sessions[addr] = token
	}
	return d.writeTOML("secrets.toml", f, 0o600)
}

// StoredToken returns a token saved with `pat create --store-token`.
func (d ConfigDir) StoredToken(addr, name string) (string, bool, error) {
	f, err := d.secrets()
	if err != nil {
		return "", false, err
	}
	t, ok := f.Tokens[addr][name]
	return t, ok, nil
}

// SetStoredToken saves (token != "") or forgets (token == "") a token.
func (d ConfigDir) SetStoredToken(addr, name, token string) error {
	f, err := d.secrets()
	if err != nil {
		return err
	}
	if token == "" {
		delete(f.Tokens[addr], name)
		if len(f.Tokens[addr]) == 0 {
			delete(f.Tokens, addr)
		}
	} else {
		if f.Tokens[addr] == nil {
			f.Tokens[addr] = map[string]string{}
		}
		f.Tokens[addr][name] = token
	}
	return d.writeTOML("secrets.toml", f, 0o600)
}

func sortedNames(m map[string]ContextConfig) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func validContextName(name string) error {
	if name == "" || strings.ContainsAny(name, "/\\\n\"") || len(name) > 64 {
		return Usagef("invalid context name %q: use 1..64 characters without slashes or quotes", name)
	}
	return nil
}

func describeContext(c ContextConfig) []Property {
	mask := func(s string) string {
		if s == "" {
			return "-"
		}
		return "********"
	}
	orDash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	return []Property{
		{"tcp_server_address", orDash(c.TCPServerAddress)},
		{"username", orDash(c.Username)},
		{"password", mask(c.Password)},
		{"token", mask(c.Token)},
		{"token_name", orDash(c.TokenName)},
		{"tcp_tls_enabled", fmt.Sprint(c.TLSEnabled)},
		{"tcp_tls_domain", orDash(c.TLSDomain)},
		{"tcp_tls_ca_file", orDash(c.TLSCAFile)},
	}
}
