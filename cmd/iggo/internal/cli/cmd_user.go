package cli

import (
	"fmt"
	"math"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/wire"
)

const (
	userActive   uint8 = 1
	userInactive uint8 = 2
)

func parseUserStatus(s string) (uint8, error) {
	switch strings.ToLower(s) {
	case "active":
		return userActive, nil
	case "inactive":
		return userInactive, nil
	}
	return 0, Usagef("invalid user status %q: want active or inactive", s)
}

func userStatusText(s uint8) string {
	switch s {
	case userActive:
		return "active"
	case userInactive:
		return "inactive"
	}
	return fmt.Sprintf("status %d", s)
}

// permissionFlags are -g and -s of user create and user permissions.
type permissionFlags struct {
	global  string
	streams []string
}

func (p *permissionFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&p.global, "global-permissions", "g", "", "global permissions, e.g. m_srv,r_srv,m_usr,r_usr,m_str,r_str,m_top,r_top,p_msg,s_msg")
	cmd.Flags().StringArrayVarP(&p.streams, "stream-permissions", "s", nil, "stream permissions STREAM_ID[:perms][#TOPIC_ID[:perms]]..., repeatable (e.g. 1:m_str,r_top#2:s_msg)")
}

// build returns nil when no flag was given.
func (p *permissionFlags) build() (*wire.Permissions, error) {
	if p.global == "" && len(p.streams) == 0 {
		return nil, nil
	}
	var out wire.Permissions
	if p.global != "" {
		g, err := ParseGlobalPermissions(p.global)
		if err != nil {
			return nil, &UsageError{Msg: err.Error()}
		}
		out.Global = g
	}
	for _, s := range p.streams {
		sp, err := ParseStreamPermissions(s)
		if err != nil {
			return nil, &UsageError{Msg: err.Error()}
		}
		out.Streams = append(out.Streams, sp)
	}
	return &out, nil
}

// permissionsText renders permissions one line per scope.
func permissionsText(p *wire.Permissions) string {
	if p == nil {
		return "none"
	}
	flags := func(names []string, vals []bool) string {
		var on []string
		for i, v := range vals {
			if v {
				on = append(on, names[i])
			}
		}
		if len(on) == 0 {
			return "-"
		}
		return strings.Join(on, ",")
	}
	g := p.Global
	lines := []string{"global: " + flags(
		[]string{"m_srv", "r_srv", "m_usr", "r_usr", "m_str", "r_str", "m_top", "r_top", "p_msg", "s_msg"},
		[]bool{g.ManageServers, g.ReadServers, g.ManageUsers, g.ReadUsers, g.ManageStreams, g.ReadStreams, g.ManageTopics, g.ReadTopics, g.PollMessages, g.SendMessages})}
	for _, s := range p.Streams {
		lines = append(lines, fmt.Sprintf("stream %d: %s", s.StreamID, flags(
			[]string{"m_str", "r_str", "m_top", "r_top", "p_msg", "s_msg"},
			[]bool{s.ManageStream, s.ReadStream, s.ManageTopics, s.ReadTopics, s.PollMessages, s.SendMessages})))
		for _, t := range s.Topics {
			lines = append(lines, fmt.Sprintf("stream %d topic %d: %s", s.StreamID, t.TopicID, flags(
				[]string{"m_top", "r_top", "p_msg", "s_msg"},
				[]bool{t.ManageTopic, t.ReadTopic, t.PollMessages, t.SendMessages})))
		}
	}
	return strings.Join(lines, "\n")
}

func (env *Env) userCmd() *cobra.Command {
	var (
		status string
		perms  permissionFlags
	)
	create := &cobra.Command{
		Use: "create USERNAME PASSWORD", Aliases: []string{"c"}, Short: "Create a user",
		Example: "  iggo user create alice s3cret\n  iggo user create bot pass -g p_msg,s_msg\n  iggo user create guest guest -u inactive -s 1:r_str#2:p_msg",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := parseUserStatus(status)
			if err != nil {
				return err
			}
			p, err := perms.build()
			if err != nil {
				return err
			}
			env.Statusf("Executing create user with username: %s", args[0])
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				u, err := c.CreateUser(cmd.Context(), wire.CreateUser{Username: args[0], Password: args[1], Status: st, Permissions: p})
				if err != nil {
					return Subject{User: "'" + args[0] + "'"}.Wrap(err)
				}
				env.Statusf("User with username: %s and ID: %d created", u.Username, u.ID)
				return nil
			})
		},
	}
	create.Flags().StringVarP(&status, "user-status", "u", "active", "active or inactive")
	perms.add(create)

	oneUser := func(use, alias, short string, nargs int, f func(c *client.Client, cmd *cobra.Command, uid wire.Identifier, args []string) error) *cobra.Command {
		return &cobra.Command{
			Use: use, Aliases: []string{alias}, Short: short, Args: cobra.ExactArgs(nargs),
			RunE: func(cmd *cobra.Command, args []string) error {
				uid, err := idArg(args, 0, "user")
				if err != nil {
					return err
				}
				return env.withClient(cmd.Context(), func(c *client.Client) error {
					return Subject{User: idText(uid)}.Wrap(f(c, cmd, uid, args))
				})
			},
		}
	}
	del := oneUser("delete USER", "d", "Delete a user", 1, func(c *client.Client, cmd *cobra.Command, uid wire.Identifier, _ []string) error {
		env.Statusf("Executing delete user with ID: %s", idText(uid))
		if err := c.DeleteUser(cmd.Context(), uid); err != nil {
			return err
		}
		env.Statusf("User with ID: %s deleted", idText(uid))
		return nil
	})
	get := oneUser("get USER", "g", "Show a user and its permissions", 1, func(c *client.Client, cmd *cobra.Command, uid wire.Identifier, _ []string) error {
		u, err := c.GetUser(cmd.Context(), uid)
		if err != nil {
			return err
		}
		t := Table{Header: []string{"Property", "Value"}}
		t.Add("User ID", fmt.Sprint(u.ID))
		t.Add("Created", timeText(u.CreatedAt))
		t.Add("Status", userStatusText(u.Status))
		t.Add("Username", u.Username)
		t.Add("Permissions", permissionsText(u.Permissions))
		return t.Render(env.Out, ListTable)
	})
	var mode string
	list := &cobra.Command{
		Use: "list", Aliases: []string{"l"}, Short: "List users", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := listMode(mode)
			if err != nil {
				return err
			}
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				users, err := c.GetUsers(cmd.Context())
				if err != nil {
					return err
				}
				if len(users) == 0 {
					env.Statusf("No users found!")
					return nil
				}
				t := Table{Header: []string{"ID", "Created", "Status", "Username"}}
				for _, u := range users {
					t.Add(fmt.Sprint(u.ID), timeText(u.CreatedAt), userStatusText(u.Status), u.Username)
				}
				return t.Render(env.Out, m)
			})
		},
	}
	addListMode(list, &mode)
	name := oneUser("name USER NEW_USERNAME", "n", "Rename a user", 2, func(c *client.Client, cmd *cobra.Command, uid wire.Identifier, args []string) error {
		env.Statusf("Executing rename user with ID: %s to %s", idText(uid), args[1])
		if err := c.UpdateUser(cmd.Context(), uid, &args[1], nil); err != nil {
			return err
		}
		env.Statusf("User with ID: %s renamed to %s", idText(uid), args[1])
		return nil
	})
	statusCmd := oneUser("status USER active|inactive", "s", "Activate or deactivate a user", 2, func(c *client.Client, cmd *cobra.Command, uid wire.Identifier, args []string) error {
		st, err := parseUserStatus(args[1])
		if err != nil {
			return err
		}
		env.Statusf("Executing set status %s for user with ID: %s", userStatusText(st), idText(uid))
		if err := c.UpdateUser(cmd.Context(), uid, nil, &st); err != nil {
			return err
		}
		env.Statusf("User with ID: %s is now %s", idText(uid), userStatusText(st))
		return nil
	})
	password := &cobra.Command{
		Use: "password USER [CURRENT_PASSWORD NEW_PASSWORD]", Aliases: []string{"pwd"}, Short: "Change a user's password",
		Long: "Change a user's password; without the two passwords they are prompted for (or read as two lines of standard input).",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 && len(args) != 3 {
				return fmt.Errorf("want USER, or USER CURRENT_PASSWORD NEW_PASSWORD")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			uid, err := idArg(args, 0, "user")
			if err != nil {
				return err
			}
			cur, next := "", ""
			if len(args) == 3 {
				cur, next = args[1], args[2]
			} else {
				if cur, err = env.promptSecret("Current password: "); err != nil {
					return err
				}
				if next, err = env.promptSecret("New password: "); err != nil {
					return err
				}
			}
			env.Statusf("Executing change password for user with ID: %s", idText(uid))
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				if err := c.ChangePassword(cmd.Context(), uid, cur, next); err != nil {
					return Subject{User: idText(uid)}.Wrap(err)
				}
				env.Statusf("Password for user with ID: %s changed", idText(uid))
				return nil
			})
		},
	}
	return groupCommand("user", "u", "User operations", create, del, get, list, name, statusCmd, password, env.permissionsCmd("permissions", "p"))
}

// permissionsCmd replaces a user's permissions (also reachable as the
// top-level `iggo permissions`).
func (env *Env) permissionsCmd(use, alias string) *cobra.Command {
	var perms permissionFlags
	cmd := &cobra.Command{
		Use: use + " USER", Short: "Replace a user's permissions (none given: remove them)",
		Example: "  iggo user permissions alice -g r_srv,r_str\n  iggo user permissions bot -s 0:p_msg,s_msg",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			uid, err := idArg(args, 0, "user")
			if err != nil {
				return err
			}
			p, err := perms.build()
			if err != nil {
				return err
			}
			env.Statusf("Executing update permissions for user with ID: %s", idText(uid))
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				if err := c.UpdatePermissions(cmd.Context(), uid, p); err != nil {
					return Subject{User: idText(uid)}.Wrap(err)
				}
				env.Statusf("Permissions for user with ID: %s updated", idText(uid))
				return nil
			})
		},
	}
	if alias != "" {
		cmd.Aliases = []string{alias}
	}
	perms.add(cmd)
	return cmd
}

// promptSecret asks for a secret on the terminal or reads a line of stdin.
func (env *Env) promptSecret(prompt string) (string, error) {
	if env.IsTerminal(env.In) {
		fmt.Fprint(env.Err, prompt)
		s, err := readNoEcho(env.In)
		fmt.Fprintln(env.Err)
		if err != nil {
			return "", localErr("read: %v", err)
		}
		return s, nil
	}
	s, err := readLine(env.In)
	if err != nil && s == "" {
		return "", Usagef("%s missing on standard input", strings.TrimSuffix(prompt, ": "))
	}
	return s, nil
}

func (env *Env) patCmd() *cobra.Command {
	var store bool
	create := &cobra.Command{
		Use: "create NAME [EXPIRY...]", Aliases: []string{"c"}, Short: "Create a personal access token",
		Long: `Create a personal access token for the logged-in user. EXPIRY is a duration
("1day", "3weeks", "1h 30m") or "never"/"unlimited" (default: the server's
default). The token is printed once; --store-token saves it in the config
directory instead, for use with -n NAME.`,
		Example: "  iggo pat create ci 30days\n  iggo pat create laptop --store-token",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			var expiry uint64
			if len(args) > 1 {
				us, err := ParseExpiry(strings.Join(args[1:], " "))
				if err != nil {
					return &UsageError{Msg: err.Error()}
				}
				expiry = us
			}
			env.Statusf("Executing create personal access token with name: %s and expiry: %s", name, patExpiryText(expiry))
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				tok, err := c.CreatePersonalAccessToken(cmd.Context(), name, expiry)
				if err != nil {
					return Subject{Token: "'" + name + "'"}.Wrap(err)
				}
				if store {
					dir, err := env.ConfigDir()
					if err != nil {
						return err
					}
					if err := dir.SetStoredToken(env.Global.Address, name, tok); err != nil {
						return err
					}
					env.Statusf("Personal access token with name: %s created and stored; use it with -n %s", name, name)
					return nil
				}
				env.Statusf("Personal access token with name: %s created", name)
				if env.Global.Quiet {
					// Only the token, for TOKEN=$(iggo -q pat create ...).
					_, err = fmt.Fprintln(env.Out, tok)
					return err
				}
				_, err = fmt.Fprintf(env.Out, "Token: %s\n", tok)
				return err
			})
		},
	}
	create.Flags().BoolVarP(&store, "store-token", "s", false, "store the token in the config directory instead of printing it")
	del := &cobra.Command{
		Use: "delete NAME", Aliases: []string{"d"}, Short: "Delete a personal access token", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			env.Statusf("Executing delete personal access token with name: %s", args[0])
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				if err := c.DeletePersonalAccessToken(cmd.Context(), args[0]); err != nil {
					return Subject{Token: "'" + args[0] + "'"}.Wrap(err)
				}
				if dir, err := env.ConfigDir(); err == nil {
					if _, ok, _ := dir.StoredToken(env.Global.Address, args[0]); ok {
						if err := dir.SetStoredToken(env.Global.Address, args[0], ""); err != nil {
							return err
						}
					}
				}
				env.Statusf("Personal access token with name: %s deleted", args[0])
				return nil
			})
		},
	}
	var mode string
	list := &cobra.Command{
		Use: "list", Aliases: []string{"l"}, Short: "List your personal access tokens", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := listMode(mode)
			if err != nil {
				return err
			}
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				toks, err := c.GetPersonalAccessTokens(cmd.Context())
				if err != nil {
					return err
				}
				if len(toks) == 0 {
					env.Statusf("No personal access tokens found!")
					return nil
				}
				t := Table{Header: []string{"Name", "Token Expiry Time"}}
				for _, tk := range toks {
					exp := "unlimited"
					if tk.ExpiryAt != 0 {
						exp = timeText(tk.ExpiryAt)
					}
					t.Add(tk.Name, exp)
				}
				return t.Render(env.Out, m)
			})
		},
	}
	addListMode(list, &mode)
	return groupCommand("pat", "", "Personal access token operations", create, del, list)
}

func patExpiryText(us uint64) string {
	switch us {
	case 0:
		return "server default"
	case math.MaxUint64:
		return "unlimited"
	}
	return formatDurationUs(us)
}
