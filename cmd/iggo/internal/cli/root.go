// Package cli is the iggo command-line tool: Iggy's command tree (streams,
// topics, partitions, segments, messages, consumer groups and offsets,
// users, permissions, tokens, clients, system commands, contexts, login
// sessions) plus `iggo bench`. It talks to servers only through package
// client.
//
// Run is the whole program: it parses args, runs one command and returns
// the exit code, writing results to stdout and errors to stderr, so tests
// run commands in-process exactly as the binary does.
//
// # Global options
//
// As in Iggy's CLI, global options come before the command:
//
//	iggo -u iggy -p iggy --tcp-server-address 10.0.0.1:8090 stream list
//
// Connection settings resolve flag > active context > built-in default.
// Credentials resolve: -t token, -n stored token name, -u/-p (the password
// is prompted for, or read from stdin, when -p is missing), then a login
// session for the address (`iggo login`), then the context's credentials,
// then IGGY_USERNAME/IGGY_PASSWORD.
//
// # Extension points
//
// Other packages add commands with Register (typically from an init
// function in cmd/iggo): an Extension with Parent "" becomes a top-level
// command (e.g. chaos), one with Parent "cluster" a subcommand of
// `iggo cluster` next to `metadata`. Their RunE errors are reported like
// built-in ones: return Usagef(...) for usage mistakes (exit 2),
// *LocalError for local failures (exit 4); client and server errors map to
// exit 3 and 1.
package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/internal/version"
)

// Version is the CLI version: the project's (package internal/version),
// the same iggo-server reports. --version prints it with the commit and
// build date.
const Version = version.Version

// DefaultAddress is the default server address (Iggy's TCP default).
const DefaultAddress = "127.0.0.1:8090"

// DefaultWSAddress and DefaultQUICAddress are Iggy's WebSocket and QUIC
// defaults.
const (
	DefaultWSAddress   = "127.0.0.1:8092"
	DefaultQUICAddress = "127.0.0.1:8080"
)

// Extension adds a command to the tree.
type Extension struct {
	// Parent is "" for a top-level command, or the name of an existing
	// top-level command ("cluster") to add a subcommand to.
	Parent string
	// New builds the command; env gives it I/O and connection settings.
	New func(env *Env) *cobra.Command
}

var (
	extMu      sync.Mutex
	extensions []Extension
)

// Register adds extensions to every later Run.
func Register(ext ...Extension) {
	extMu.Lock()
	defer extMu.Unlock()
	extensions = append(extensions, ext...)
}

func registered() []Extension {
	extMu.Lock()
	defer extMu.Unlock()
	return append([]Extension(nil), extensions...)
}

// IO is where a run reads and writes, and how it sees the environment.
type IO struct {
	In     io.Reader
	Out    io.Writer
	Err    io.Writer
	Getenv func(string) string
	// IsTerminal reports whether a stream is an interactive terminal (nil:
	// check the file descriptor when the stream is an *os.File).
	IsTerminal func(any) bool
}

// GlobalOptions are the options given before the command.
type GlobalOptions struct {
	Address     string
	Username    string
	Password    string
	Token       string
	TokenName   string
	TLSEnabled  bool
	TLSDomain   string
	TLSCAFile   string
	TLSNoVerify bool
	// Transport is --transport (tcp, ws or quic); WSAddress, QUICAddress
	// and the WebSocket TLS options are its servers and settings.
	Transport   string
	WSAddress   string
	WSTLS       bool
	WSTLSDomain string
	QUICAddress string
	// QUIC holds the other --quic-* options (quic.go).
	QUIC    QUICOptions
	Quiet   bool
	Debug   string
	Context string
	Timeout time.Duration
}

// Env is the state shared by the commands of one run.
type Env struct {
	IO
	Global GlobalOptions

	root     *cobra.Command
	args     []string
	cfgDir   ConfigDir
	ctxName  string
	ctxCfg   ContextConfig
	resolved bool
	logger   *zap.Logger
	logClose func()
}

// Run executes one iggo command line (without the program name) and returns
// the exit code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return RunContext(context.Background(), args, IO{In: stdin, Out: stdout, Err: stderr, Getenv: os.Getenv})
}

// RunContext is Run with a context (cancelled on interrupt by main) and an
// explicit environment.
func RunContext(ctx context.Context, args []string, io IO) int {
	return runWith(ctx, args, io, registered())
}

func runWith(ctx context.Context, args []string, io IO, exts []Extension) int {
	if io.Getenv == nil {
		io.Getenv = os.Getenv
	}
	if io.IsTerminal == nil {
		io.IsTerminal = isTerminal
	}
	env := &Env{IO: io, args: args}
	defer env.closeLog()
	root := env.newRoot(exts)
	root.SetArgs(args)
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	_, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	var re *ranError
	if errors.As(err, &re) {
		msg, code := Describe(re.err)
		fmt.Fprintf(io.Err, "error: %s\n", msg)
		return code
	}
	// Anything else comes from argument parsing.
	msg, _ := Describe(&UsageError{Msg: err.Error()})
	help := "iggo --help"
	if path := commandPath(root, args); path != "" {
		help = "iggo " + path + " --help"
	}
	fmt.Fprintf(io.Err, "error: %s\nRun '%s' for usage.\n", msg, help)
	return ExitUsage
}

// commandPath finds the deepest command named by args, for the help hint.
func commandPath(root *cobra.Command, args []string) string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil || cmd == root {
		return ""
	}
	return strings.TrimPrefix(cmd.CommandPath(), root.Name()+" ")
}

// ranError marks errors returned by a command's RunE, as opposed to
// parse errors from cobra.
type ranError struct{ err error }

func (e *ranError) Error() string { return e.err.Error() }
func (e *ranError) Unwrap() error { return e.err }

func wrapRunE(cmd *cobra.Command) {
	if f := cmd.RunE; f != nil {
		cmd.RunE = func(c *cobra.Command, args []string) error {
			if err := f(c, args); err != nil {
				return &ranError{err: err}
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		wrapRunE(sub)
	}
}

func (env *Env) newRoot(exts []Extension) *cobra.Command {
	root := &cobra.Command{
		Use:   "iggo",
		Short: "iggo command-line tool: manage and use an iggo (or Apache Iggy) server",
		Long: `iggo is the command-line tool of iggo, Apache Iggy's server rebuilt in Go.
It speaks Iggy's protocol 0.11, so it also works against Iggy 0.9 servers.

Global options go before the command:
  iggo -u iggy -p iggy stream list
  iggo --tcp-server-address 10.0.0.1:8090 -t <token> topic list prod

Ids or names are accepted everywhere a stream, topic, group or user is named:
a number is a numeric id (0-based), anything else a name.`,
		Version:          version.Line("iggo"),
		SilenceErrors:    true,
		SilenceUsage:     true,
		TraverseChildren: true,
		Args:             cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return err
	})
	g := &env.Global
	f := root.Flags()
	f.StringVar(&g.Address, "tcp-server-address", DefaultAddress, "server TCP address")
	f.StringVarP(&g.Username, "username", "u", "", "username (the password is prompted for when -p is missing)")
	f.StringVarP(&g.Password, "password", "p", "", "password")
	f.StringVarP(&g.Token, "token", "t", "", "personal access token to log in with")
	f.StringVarP(&g.TokenName, "token-name", "n", "", "name of a token stored with 'pat create --store-token'")
	f.BoolVar(&g.TLSEnabled, "tcp-tls-enabled", false, "connect with TLS")
	f.StringVar(&g.TLSDomain, "tcp-tls-domain", "", "TLS server name to verify (default: the address host)")
	f.StringVar(&g.TLSCAFile, "tcp-tls-ca-file", "", "PEM file of CA certificates to trust")
	f.BoolVar(&g.TLSNoVerify, "tcp-tls-insecure", false, "do not verify the server certificate (testing only)")
	f.StringVar(&g.TLSCAFile, "tls-ca-file", "", "PEM file of CA certificates to trust (TCP TLS and WSS; same as --tcp-tls-ca-file)")
	f.BoolVar(&g.TLSNoVerify, "tls-insecure", false, "do not verify the server certificate, TCP TLS and WSS (testing only)")
	f.StringVar(&g.Transport, "transport", client.TransportTCP, "transport: tcp, ws or quic")
	f.StringVar(&g.WSAddress, "websocket-server-address", DefaultWSAddress, "server WebSocket address (--transport ws)")
	f.BoolVar(&g.WSTLS, "websocket-tls-enabled", false, "connect to the WebSocket server with TLS (wss)")
	f.StringVar(&g.WSTLSDomain, "websocket-tls-domain", "", "TLS server name to verify for wss (default: the address host)")
	f.StringVar(&g.QUICAddress, "quic-server-address", DefaultQUICAddress, "server QUIC address (--transport quic)")
	addQUICFlags(f, &g.QUIC)
	f.BoolVarP(&g.Quiet, "quiet", "q", false, "print only requested data, no status lines")
	f.StringVarP(&g.Debug, "debug", "d", "", "write a debug log of client events to this file")
	f.StringVar(&g.Context, "context", "", "use this named context instead of the active one")
	f.DurationVar(&g.Timeout, "timeout", 30*time.Second, "bound on each request (replays and reconnects included)")

	root.AddCommand(
		env.streamCmd(), env.topicCmd(), env.partitionCmd(), env.segmentCmd(), env.messageCmd(),
		env.groupCmd(), env.offsetCmd(), env.userCmd(), env.patCmd(), env.clientCmd(),
		env.clusterCmd(), env.pingCmd(), env.meCmd(), env.statsCmd(), env.snapshotCmd(), env.optionsCmd(),
		env.permissionsCmd("permissions", ""), env.contextCmd(), env.loginCmd(), env.logoutCmd(), env.sessionCmd(), env.benchCmd(),
	)
	for _, ext := range exts {
		cmd := ext.New(env)
		if ext.Parent == "" {
			root.AddCommand(cmd)
			continue
		}
		parent, _, err := root.Find([]string{ext.Parent})
		if err != nil || parent == root {
			panic(fmt.Sprintf("cli: extension %q names unknown parent command %q", cmd.Name(), ext.Parent))
		}
		parent.AddCommand(cmd)
	}
	wrapRunE(root)
	env.root = root
	return root
}

// Root is the root command of this run (for extensions that need the tree).
func (env *Env) Root() *cobra.Command { return env.root }

// resolve loads the config directory and the context once.
func (env *Env) resolve() error {
	if env.resolved {
		return nil
	}
	dir, err := configDir(env.Getenv)
	if err != nil {
		return err
	}
	env.cfgDir = dir
	name := env.Global.Context
	if name == "" {
		if name, err = dir.ActiveContext(); err != nil {
			return err
		}
	}
	all, err := dir.Contexts()
	if err != nil {
		return err
	}
	cc, ok := all[name]
	if !ok {
		return &UsageError{Msg: fmt.Sprintf("context %q does not exist", name), Hint: "list contexts with `iggo context list`"}
	}
	env.ctxName, env.ctxCfg = name, cc
	flags := env.root.Flags()
	if !flags.Changed("tcp-server-address") && cc.TCPServerAddress != "" {
		env.Global.Address = cc.TCPServerAddress
	}
	if !flags.Changed("tcp-tls-enabled") && cc.TLSEnabled {
		env.Global.TLSEnabled = true
	}
	if env.Global.TLSDomain == "" {
		env.Global.TLSDomain = cc.TLSDomain
	}
	if env.Global.TLSCAFile == "" {
		env.Global.TLSCAFile = cc.TLSCAFile
	}
	env.resolved = true
	return nil
}

// ConfigDir is the CLI's configuration directory.
func (env *Env) ConfigDir() (ConfigDir, error) {
	if err := env.resolve(); err != nil {
		return ConfigDir{}, err
	}
	return env.cfgDir, nil
}

// Statusf prints a status line to stdout unless -q was given.
func (env *Env) Statusf(format string, args ...any) {
	if env.Global.Quiet {
		return
	}
	fmt.Fprintf(env.Out, format+"\n", args...)
}

// creds is what a connection logs in with, and where it came from.
type creds struct {
	user, pass, token string
	source            string // "flags", "session", "context", "env"
}

// credentials picks what to log in with (see the package doc for the order).
func (env *Env) credentials() (creds, error) {
	g := &env.Global
	switch {
	case g.Token != "":
		return creds{token: g.Token, source: "flags"}, nil
	case g.TokenName != "":
		t, err := env.storedToken(g.TokenName)
		return creds{token: t, source: "flags"}, err
	case g.Username != "":
		if env.root.Flags().Changed("password") {
			return creds{user: g.Username, pass: g.Password, source: "flags"}, nil
		}
		p, err := env.readPassword()
		return creds{user: g.Username, pass: p, source: "flags"}, err
	}
	if t, ok, err := env.cfgDir.Session(g.Address); err != nil {
		return creds{}, err
	} else if ok {
		return creds{token: t, source: "session"}, nil
	}
	cc := env.ctxCfg
	switch {
	case cc.Token != "":
		return creds{token: cc.Token, source: "context"}, nil
	case cc.TokenName != "":
		t, err := env.storedToken(cc.TokenName)
		return creds{token: t, source: "context"}, err
	case cc.Username != "":
		return creds{user: cc.Username, pass: cc.Password, source: "context"}, nil
	}
	if u, p := env.Getenv("IGGY_USERNAME"), env.Getenv("IGGY_PASSWORD"); u != "" {
		return creds{user: u, pass: p, source: "env"}, nil
	}
	return creds{}, &UsageError{Msg: "no credentials",
		Hint: "pass -u USER -p PASSWORD or -t TOKEN before the command, set IGGY_USERNAME and IGGY_PASSWORD, or run `iggo login`"}
}

func (env *Env) storedToken(name string) (string, error) {
	t, ok, err := env.cfgDir.StoredToken(env.Global.Address, name)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", &UsageError{Msg: fmt.Sprintf("no token named %q is stored for %s", name, env.Global.Address),
			Hint: "store one with `iggo pat create NAME --store-token`"}
	}
	return t, nil
}

// readPassword prompts on a terminal (without echo) or reads one line of
// stdin.
func (env *Env) readPassword() (string, error) {
	if env.IsTerminal(env.In) {
		fmt.Fprint(env.Err, "Password: ")
		p, err := readNoEcho(env.In)
		fmt.Fprintln(env.Err)
		if err != nil {
			return "", localErr("read password: %v", err)
		}
		return p, nil
	}
	line, err := readLine(env.In)
	if err != nil && line == "" {
		return "", &UsageError{Msg: "password missing", Hint: "pass -p PASSWORD, pipe it on stdin, or set IGGY_USERNAME and IGGY_PASSWORD"}
	}
	return line, nil
}

// ClientConfig is the client configuration for the resolved global options;
// withLogin adds the credentials.
func (env *Env) ClientConfig(withLogin bool) (client.Config, error) {
	if err := env.resolve(); err != nil {
		return client.Config{}, err
	}
	g := &env.Global
	cfg := client.DefaultConfig()
	cfg.SDKName = "iggo-cli"
	cfg.SDKVersion = Version
	cfg.Reconnect.Enabled = false // a CLI reports a broken connection instead of retrying
	cfg.HeartbeatInterval = 0
	if g.Timeout <= 0 {
		return cfg, Usagef("--timeout must be positive")
	}
	cfg.RequestTimeout = g.Timeout
	cfg.DialTimeout = min(5*time.Second, g.Timeout)
	tlsOn, domain := g.TLSEnabled, g.TLSDomain
	switch g.Transport {
	case "", client.TransportTCP:
		cfg.Addresses = []string{g.Address}
	case client.TransportWS:
		cfg.Transport, cfg.Addresses = client.TransportWS, []string{g.WSAddress}
		tlsOn, domain = g.WSTLS, g.WSTLSDomain
	case client.TransportQUIC:
		cfg.Transport, cfg.Addresses = client.TransportQUIC, []string{g.QUICAddress}
	case "http":
		return cfg, Usagef("--transport http: this CLI speaks the binary protocol; use tcp, ws or quic")
	default:
		return cfg, Usagef("--transport %q: want tcp, ws or quic", g.Transport)
	}
	if tlsOn {
		tc := &tls.Config{ServerName: domain, InsecureSkipVerify: g.TLSNoVerify}
		if g.TLSCAFile != "" {
			pem, err := os.ReadFile(g.TLSCAFile)
			if err != nil {
				return cfg, localErr("read --tcp-tls-ca-file: %v", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return cfg, localErr("%s holds no PEM certificates", g.TLSCAFile)
			}
			tc.RootCAs = pool
		}
		cfg.TLS = tc
	}
	if cfg.Transport == client.TransportQUIC {
		if err := g.QUIC.apply(&cfg, g.TLSCAFile); err != nil {
			return cfg, err
		}
	}
	if l, err := env.debugLogger(); err != nil {
		return cfg, err
	} else {
		cfg.Logger = l
	}
	if withLogin {
		cr, err := env.credentials()
		if err != nil {
			return cfg, err
		}
		cfg.Username, cfg.Password, cfg.Token = cr.user, cr.pass, cr.token
	}
	return cfg, nil
}

// Connect dials the server and logs in.
func (env *Env) Connect(ctx context.Context) (*client.Client, error) {
	cfg, err := env.ClientConfig(true)
	if err != nil {
		return nil, err
	}
	return client.Dial(ctx, cfg)
}

// connectNoLogin dials without logging in (ping, login).
func (env *Env) connectNoLogin(ctx context.Context) (*client.Client, error) {
	cfg, err := env.ClientConfig(false)
	if err != nil {
		return nil, err
	}
	return client.Dial(ctx, cfg)
}

// withClient connects, runs f and closes the connection.
func (env *Env) withClient(ctx context.Context, f func(c *client.Client) error) error {
	c, err := env.Connect(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return f(c)
}

func (env *Env) debugLogger() (*zap.Logger, error) {
	if env.Global.Debug == "" {
		return nil, nil
	}
	if env.logger != nil {
		return env.logger, nil
	}
	zc := zap.NewDevelopmentConfig()
	zc.OutputPaths = []string{env.Global.Debug}
	zc.ErrorOutputPaths = []string{env.Global.Debug}
	l, err := zc.Build()
	if err != nil {
		return nil, localErr("open debug log %s: %v", env.Global.Debug, err)
	}
	env.logger = l
	env.logClose = func() { _ = l.Sync() }
	return l, nil
}

func (env *Env) closeLog() {
	if env.logClose != nil {
		env.logClose()
	}
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// termColumns is the width of the terminal behind v (0 when unknown: bars
// cannot be drawn there).
func termColumns(v any) int {
	f, ok := v.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}

// readNoEcho reads a line from a terminal with echo switched off.
func readNoEcho(in io.Reader) (string, error) {
	f, ok := in.(*os.File)
	if !ok {
		return readLine(in)
	}
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return readLine(in)
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	quiet.Lflag |= unix.ICANON | unix.ISIG
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &quiet); err != nil {
		return readLine(in)
	}
	defer unix.IoctlSetTermios(fd, unix.TCSETS, old)
	return readLine(in)
}

// readLine reads up to a newline one byte at a time, so nothing after the
// line is consumed from a shared stdin.
func readLine(in io.Reader) (string, error) {
	var b []byte
	var one [1]byte
	for {
		n, err := in.Read(one[:])
		if n == 1 {
			if one[0] == '\n' {
				return strings.TrimSuffix(string(b), "\r"), nil
			}
			b = append(b, one[0])
		}
		if err != nil {
			return string(b), err
		}
	}
}
