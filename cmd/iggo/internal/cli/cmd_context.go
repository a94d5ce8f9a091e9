package cli

import (
	"fmt"
	"math"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/wire"
)

// SessionTokenName is the personal access token `iggo login` creates.
const SessionTokenName = "iggo-cli-session"

// defaultSessionExpiry is how long a login lasts without an argument (µs).
const defaultSessionExpiry = 15 * 60 * 1_000_000

func (env *Env) contextCmd() *cobra.Command {
	var mode string
	list := &cobra.Command{
		Use: "list", Aliases: []string{"l"}, Short: "List contexts", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := listMode(mode)
			if err != nil {
				return err
			}
			dir, err := env.ConfigDir()
			if err != nil {
				return err
			}
			all, err := dir.Contexts()
			if err != nil {
				return err
			}
			active, err := dir.ActiveContext()
			if err != nil {
				return err
			}
			t := Table{Header: []string{"Name", "Active", "Server address"}}
			for _, n := range sortedNames(all) {
				mark := ""
				if n == active {
					mark = "*"
				}
				addr := all[n].TCPServerAddress
				if addr == "" {
					addr = DefaultAddress
				}
				t.Add(n, mark, addr)
			}
			return t.Render(env.Out, m)
		},
	}
	addListMode(list, &mode)
	use := &cobra.Command{
		Use: "use NAME", Aliases: []string{"u"}, Short: "Make a context the active one", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := env.ConfigDir()
			if err != nil {
				return err
			}
			all, err := dir.Contexts()
			if err != nil {
				return err
			}
			if _, ok := all[args[0]]; !ok {
				return &UsageError{Msg: fmt.Sprintf("context %q does not exist", args[0]), Hint: "create it with `iggo context create " + args[0] + "`"}
			}
			if err := dir.SetActiveContext(args[0]); err != nil {
				return err
			}
			env.Statusf("Context %s is now active", args[0])
			return nil
		},
	}
	var cc ContextConfig
	create := &cobra.Command{
		Use: "create NAME", Aliases: []string{"c"}, Short: "Create a named context (connection defaults)",
		Example: "  iggo context create prod --tcp-server-address 10.0.0.1:8090 -u admin -p s3cret\n  iggo context use prod",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validContextName(args[0]); err != nil {
				return err
			}
			if cc.Token != "" && cc.Username != "" {
				return Usagef("give either --username or --token, not both")
			}
			dir, err := env.ConfigDir()
			if err != nil {
				return err
			}
			all, err := dir.Contexts()
			if err != nil {
				return err
			}
			if _, ok := all[args[0]]; ok && args[0] != DefaultContext {
				return &UsageError{Msg: fmt.Sprintf("context %q already exists", args[0]), Hint: "delete it first with `iggo context delete " + args[0] + "`"}
			}
			all[args[0]] = cc
			if err := dir.SaveContexts(all); err != nil {
				return err
			}
			env.Statusf("Context %s created", args[0])
			return nil
		},
	}
	cf := create.Flags()
	cf.StringVar(&cc.TCPServerAddress, "tcp-server-address", "", "server TCP address")
	cf.StringVarP(&cc.Username, "username", "u", "", "username")
	cf.StringVarP(&cc.Password, "password", "p", "", "password (stored in plain text, mode 0600)")
	cf.StringVarP(&cc.Token, "token", "t", "", "personal access token")
	cf.StringVarP(&cc.TokenName, "token-name", "n", "", "name of a token stored with 'pat create --store-token'")
	cf.BoolVar(&cc.TLSEnabled, "tcp-tls-enabled", false, "connect with TLS")
	cf.StringVar(&cc.TLSDomain, "tcp-tls-domain", "", "TLS server name")
	cf.StringVar(&cc.TLSCAFile, "tcp-tls-ca-file", "", "PEM file of CA certificates")
	del := &cobra.Command{
		Use: "delete NAME", Aliases: []string{"d"}, Short: "Delete a context", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := env.ConfigDir()
			if err != nil {
				return err
			}
			all, err := dir.Contexts()
			if err != nil {
				return err
			}
			if _, ok := all[args[0]]; !ok || args[0] == DefaultContext {
				if args[0] == DefaultContext {
					return Usagef("the default context cannot be deleted")
				}
				return &UsageError{Msg: fmt.Sprintf("context %q does not exist", args[0]), Hint: "list contexts with `iggo context list`"}
			}
			delete(all, args[0])
			if err := dir.SaveContexts(all); err != nil {
				return err
			}
			if active, err := dir.ActiveContext(); err == nil && active == args[0] {
				if err := dir.SetActiveContext(DefaultContext); err != nil {
					return err
				}
			}
			env.Statusf("Context %s deleted", args[0])
			return nil
		},
	}
	show := &cobra.Command{
		Use: "show [NAME]", Aliases: []string{"s"}, Short: "Show a context (default: the active one)", Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := env.ConfigDir()
			if err != nil {
				return err
			}
			all, err := dir.Contexts()
			if err != nil {
				return err
			}
			name, err := dir.ActiveContext()
			if err != nil {
				return err
			}
			if len(args) == 1 {
				name = args[0]
			}
			c, ok := all[name]
			if !ok {
				return &UsageError{Msg: fmt.Sprintf("context %q does not exist", name), Hint: "list contexts with `iggo context list`"}
			}
			t := Table{Header: []string{"Context " + name, "Value"}}
			for _, p := range describeContext(c) {
				t.Add(p.Name, p.Value)
			}
			return t.Render(env.Out, ListTable)
		},
	}
	return groupCommand("context", "ctx", "Named contexts: stored connection defaults", list, use, create, del, show)
}

func (env *Env) loginCmd() *cobra.Command {
	return &cobra.Command{
		Use: "login [EXPIRY...]", Aliases: []string{"li"}, Short: "Log in and keep a session for later commands",
		Long: `Log in with the given credentials and keep a session: a personal access token
named "` + SessionTokenName + `" is created on the server and stored in the config
directory, and later commands against the same address use it. EXPIRY is how
long the session lasts (default 15m; "none" never expires).`,
		Example: "  iggo -u iggy -p iggy login\n  iggo -u iggy -p iggy login 8h",
		RunE: func(cmd *cobra.Command, args []string) error {
			expiry := uint64(defaultSessionExpiry)
			if len(args) > 0 {
				us, err := ParseExpiry(strings.Join(args, " "))
				if err != nil {
					return &UsageError{Msg: err.Error()}
				}
				if us != 0 {
					expiry = us
				}
			}
			cfg, err := env.ClientConfig(false)
			if err != nil {
				return err
			}
			cr, err := env.credentials()
			if err != nil {
				return err
			}
			cfg.Username, cfg.Password, cfg.Token = cr.user, cr.pass, cr.token
			c, err := client.Dial(cmd.Context(), cfg)
			if err != nil {
				if cr.source == "session" {
					// A stale session: forget it so the next login starts clean.
					_ = env.cfgDir.SetSession(env.Global.Address, "")
				}
				return err
			}
			defer c.Close()
			if cr.source == "session" {
				env.Statusf("Already logged into iggo server %s", env.Global.Address)
				return nil
			}
			toks, err := c.GetPersonalAccessTokens(cmd.Context())
			if err != nil {
				return err
			}
			for _, t := range toks {
				if t.Name == SessionTokenName {
					if err := c.DeletePersonalAccessToken(cmd.Context(), SessionTokenName); err != nil {
						return Subject{Token: "'" + SessionTokenName + "'"}.Wrap(err)
					}
				}
			}
			tok, err := c.CreatePersonalAccessToken(cmd.Context(), SessionTokenName, expiry)
			if err != nil {
				return Subject{Token: "'" + SessionTokenName + "'"}.Wrap(err)
			}
			if err := env.cfgDir.SetSession(env.Global.Address, tok); err != nil {
				return err
			}
			env.Statusf("Successfully logged into iggo server %s (session expires: %s)", env.Global.Address, sessionExpiryText(expiry))
			return nil
		},
	}
}

func sessionExpiryText(us uint64) string {
	if us == math.MaxUint64 {
		return "never"
	}
	return "in " + formatDurationUs(us)
}

func (env *Env) logoutCmd() *cobra.Command {
	return &cobra.Command{
		Use: "logout", Aliases: []string{"lo"}, Short: "End the login session for the server address", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := env.ConfigDir()
			if err != nil {
				return err
			}
			tok, ok, err := dir.Session(env.Global.Address)
			if err != nil {
				return err
			}
			if !ok {
				env.Statusf("Not logged into iggo server %s", env.Global.Address)
				return nil
			}
			cfg, err := env.ClientConfig(false)
			if err != nil {
				return err
			}
			cfg.Token = tok
			c, err := client.Dial(cmd.Context(), cfg)
			switch {
			case err == nil:
				defer c.Close()
				if err := c.DeletePersonalAccessToken(cmd.Context(), SessionTokenName); err != nil && !wire.IsNotFound(err) {
					return err
				}
			case wire.HasCode(err, wire.CodeInvalidPersonalAccessToken) || wire.HasCode(err, wire.CodePersonalAccessTokenExpired):
				// The session already ended on the server; only the local copy is left.
			default:
				return err
			}
			if err := dir.SetSession(env.Global.Address, ""); err != nil {
				return err
			}
			env.Statusf("Successfully logged out from iggo server %s", env.Global.Address)
			return nil
		},
	}
}

func (env *Env) sessionCmd() *cobra.Command {
	status := &cobra.Command{
		Use: "status", Aliases: []string{"s"}, Short: "Tell whether a login session is stored for the server address", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := env.ConfigDir()
			if err != nil {
				return err
			}
			_, ok, err := dir.Session(env.Global.Address)
			if err != nil {
				return err
			}
			if ok {
				fmt.Fprintf(env.Out, "Active login session for iggo server %s\n", env.Global.Address)
			} else {
				fmt.Fprintf(env.Out, "No active login session for iggo server %s\n", env.Global.Address)
			}
			return nil
		},
	}
	return groupCommand("session", "sess", "Login session operations", status)
}
