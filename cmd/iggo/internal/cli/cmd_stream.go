package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/wire"
)

// idArg parses args[i] as an identifier, reporting a usage error naming
// what it is.
func idArg(args []string, i int, what string) (wire.Identifier, error) {
	id, err := ParseIdentifier(args[i])
	if err != nil {
		return id, Usagef("%s: %v", what, err)
	}
	return id, nil
}

func addListMode(cmd *cobra.Command, mode *string) {
	cmd.Flags().StringVarP(mode, "list-mode", "l", "table", "output: table or list (one |-separated line per row)")
}

func listMode(s string) (ListMode, error) {
	m, err := ParseListMode(s)
	if err != nil {
		return "", &UsageError{Msg: err.Error()}
	}
	return m, nil
}

func groupCommand(use, alias, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() }}
	if alias != "" {
		c.Aliases = []string{alias}
	}
	c.AddCommand(subs...)
	return c
}

func (env *Env) streamCmd() *cobra.Command {
	create := &cobra.Command{
		Use: "create NAME", Aliases: []string{"c"}, Short: "Create a stream",
		Example: "  iggo stream create prod",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			sub := Subject{Stream: "'" + name + "'"}
			env.Statusf("Executing create stream with name: %s", name)
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				st, err := c.CreateStream(cmd.Context(), name, nil)
				if err != nil {
					return sub.Wrap(err)
				}
				env.Statusf("Stream with name: %s and ID: %d created", st.Name, st.ID)
				return nil
			})
		},
	}
	del := &cobra.Command{
		Use: "delete STREAM", Aliases: []string{"d"}, Short: "Delete a stream and everything in it",
		Example: "  iggo stream delete prod\n  iggo stream delete 0",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sid, err := idArg(args, 0, "stream")
			if err != nil {
				return err
			}
			env.Statusf("Executing delete stream with ID: %s", idText(sid))
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				if err := c.DeleteStream(cmd.Context(), sid); err != nil {
					return Subject{Stream: idText(sid)}.Wrap(err)
				}
				env.Statusf("Stream with ID: %s deleted", idText(sid))
				return nil
			})
		},
	}
	update := &cobra.Command{
		Use: "update STREAM NEW_NAME", Aliases: []string{"u"}, Short: "Rename a stream",
		Example: "  iggo stream update prod production",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			sid, err := idArg(args, 0, "stream")
			if err != nil {
				return err
			}
			env.Statusf("Executing update stream with ID: %s and name: %s", idText(sid), args[1])
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				if err := c.UpdateStream(cmd.Context(), sid, args[1], nil); err != nil {
					sub := Subject{Stream: idText(sid)}
					if wire.HasCode(err, wire.CodeStreamNameAlreadyExists) {
						sub.Stream = "'" + args[1] + "'"
					}
					return sub.Wrap(err)
				}
				env.Statusf("Stream with ID: %s updated with name: %s", idText(sid), args[1])
				return nil
			})
		},
	}
	get := &cobra.Command{
		Use: "get STREAM", Aliases: []string{"g"}, Short: "Show a stream",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sid, err := idArg(args, 0, "stream")
			if err != nil {
				return err
			}
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				st, err := c.GetStream(cmd.Context(), sid)
				if err != nil {
					return Subject{Stream: idText(sid)}.Wrap(err)
				}
				t := Table{Header: []string{"Property", "Value"}}
				t.Add("Stream ID", fmt.Sprint(st.ID))
				t.Add("Created", timeText(st.CreatedAt))
				t.Add("Stream name", st.Name)
				t.Add("Stream size", fmt.Sprintf("%d B", st.SizeBytes))
				t.Add("Stream message count", fmt.Sprint(st.MessagesCount))
				t.Add("Stream topics count", fmt.Sprint(st.TopicsCount))
				if len(st.Options) > 0 {
					t.Add("Options", optionsText(st.Options))
				}
				return t.Render(env.Out, ListTable)
			})
		},
	}
	var mode string
	list := &cobra.Command{
		Use: "list", Aliases: []string{"l"}, Short: "List streams",
		Example: "  iggo stream list\n  iggo stream list -l list",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := listMode(mode)
			if err != nil {
				return err
			}
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				streams, err := c.GetStreams(cmd.Context())
				if err != nil {
					return err
				}
				if len(streams) == 0 {
					env.Statusf("No streams found!")
					return nil
				}
				t := Table{Header: []string{"ID", "Created", "Name", "Size (B)", "Messages", "Topics"}}
				for _, s := range streams {
					t.Add(fmt.Sprint(s.ID), timeText(s.CreatedAt), s.Name, fmt.Sprint(s.SizeBytes), fmt.Sprint(s.MessagesCount), fmt.Sprint(s.TopicsCount))
				}
				return t.Render(env.Out, m)
			})
		},
	}
	addListMode(list, &mode)
	purge := &cobra.Command{
		Use: "purge STREAM", Aliases: []string{"p"}, Short: "Delete all messages of a stream (topics stay)",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sid, err := idArg(args, 0, "stream")
			if err != nil {
				return err
			}
			env.Statusf("Executing purge stream with ID: %s", idText(sid))
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				if err := c.PurgeStream(cmd.Context(), sid); err != nil {
					return Subject{Stream: idText(sid)}.Wrap(err)
				}
				env.Statusf("Stream with ID: %s purged", idText(sid))
				return nil
			})
		},
	}
	return groupCommand("stream", "s", "Stream operations", create, del, update, get, list, purge)
}

// optionsText renders an options block as "k=v, k=v".
func optionsText(o wire.Options) string {
	parts := make([]string, 0, len(o))
	for _, e := range o {
		parts = append(parts, string(e.Key.Value)+"="+optionValueText(string(e.Key.Value), e.Value))
	}
	return strings.Join(parts, "\n")
}

// sentOptions names what a request's options block held, as the user gave
// it ("segment_size=abc, durability=persisted"), for error messages.
func sentOptions(o wire.Options) string {
	parts := make([]string, 0, len(o))
	for _, e := range o {
		parts = append(parts, string(e.Key.Value)+"="+HeaderValueText(e.Value))
	}
	return strings.Join(parts, ", ")
}

func optionValueText(key string, v wire.HeaderValue) string {
	if v.Kind == wire.KindUint64 {
		n, _ := v.AsUint64()
		if n == math.MaxUint64 {
			return "unlimited"
		}
		if key == wire.OptMessageExpiry {
			return FormatExpiry(n)
		}
	}
	return HeaderValueText(v)
}

// topicOptions collects create/update settings into an options block.
type topicOptions struct {
	maxSize     string
	set         []string
	durability  string
	offsetDurab string
	expiryArgs  []string
	compression string
	forUpdate   bool
}

func (o *topicOptions) build() (wire.Options, error) {
	var opts wire.Options
	switch c := strings.ToLower(o.compression); c {
	case "none", "gzip":
		opts = opts.With(wire.OptCompressionAlgorithm, wire.StringValue(c))
	case "zstd", "lz4":
		// iggo's codecs ride its own option; Iggy's compression_algorithm
		// knows none and gzip only.
		opts = opts.With("compression_codec", wire.StringValue(c))
	default:
		return nil, Usagef("invalid compression %q: want none, gzip, zstd or lz4", o.compression)
	}
	if len(o.expiryArgs) > 0 {
		us, err := ParseExpiry(strings.Join(o.expiryArgs, " "))
		if err != nil {
			return nil, Usagef("%v", err)
		}
		if us != 0 {
			opts = opts.With(wire.OptMessageExpiry, wire.Uint64Value(us))
		}
	}
	switch ms := strings.ToLower(strings.TrimSpace(o.maxSize)); ms {
	case "", "server_default", "0":
	case "unlimited":
		opts = opts.With(wire.OptMaxTopicSize, wire.Uint64Value(math.MaxUint64))
	default:
		n, err := ParseByteSize(o.maxSize)
		if err != nil {
			return nil, Usagef("--max-topic-size: %v", err)
		}
		opts = opts.With(wire.OptMaxTopicSize, wire.Uint64Value(n))
	}
	for _, d := range []struct{ key, val string }{{"durability", o.durability}, {"consumer_offset_durability", o.offsetDurab}} {
		if d.val == "" {
			continue
		}
		if d.val != "replicated" && d.val != "persisted" {
			return nil, Usagef("invalid %s %q: want replicated or persisted", strings.ReplaceAll(d.key, "_", "-"), d.val)
		}
		opts = opts.With(d.key, wire.StringValue(d.val))
	}
	for _, kv := range o.set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || v == "" {
			return nil, Usagef("invalid --set %q: want KEY=VALUE (see `iggo options topic`)", kv)
		}
		opts = opts.With(k, wire.StringValue(v))
	}
	return opts, nil
}

func (env *Env) topicCmd() *cobra.Command {
	var copts topicOptions
	create := &cobra.Command{
		Use: "create STREAM NAME PARTITIONS COMPRESSION [EXPIRY...]", Aliases: []string{"c"},
		Short: "Create a topic",
		Long: `Create a topic with a partition count, a compression codec (none, gzip, zstd
or lz4: batches are stored compressed, polls return what was sent; zstd and
lz4 are iggo's compression_codec option) and an optional message expiry ("15days", "1h 30m", "unlimited"; default: server default).
Further settings ride --set KEY=VALUE (see "iggo options topic").`,
		Example: "  iggo topic create prod orders 3 none\n  iggo topic create prod sensors 2 gzip 15days\n  iggo topic create prod logs 1 none 7days -m 10GB --durability persisted",
		Args:    cobra.MinimumNArgs(4),
		RunE: func(cmd *cobra.Command, args []string) error {
			sid, err := idArg(args, 0, "stream")
			if err != nil {
				return err
			}
			name := args[1]
			parts, err := parseU32("partition count", args[2])
			if err != nil {
				return &UsageError{Msg: err.Error()}
			}
			copts.compression, copts.expiryArgs = args[3], args[4:]
			opts, err := copts.build()
			if err != nil {
				return err
			}
			env.Statusf("Executing create topic with name: %s, partitions: %d in stream with ID: %s", name, parts, idText(sid))
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				td, err := c.CreateTopic(cmd.Context(), wire.CreateTopic{StreamID: sid, PartitionsCount: parts, Name: name, Options: opts})
				if err != nil {
					return Subject{Stream: idText(sid), Topic: "'" + name + "'", Option: "topic", Sent: sentOptions(opts)}.Wrap(err)
				}
				env.Statusf("Topic with name: %s, ID: %d and %d partitions created in stream with ID: %s", td.Name, td.ID, td.PartitionsCount, idText(sid))
				return nil
			})
		},
	}
	create.Flags().StringVarP(&copts.maxSize, "max-topic-size", "m", "server_default", "max topic size such as 15GB or unlimited")
	create.Flags().StringArrayVar(&copts.set, "set", nil, "further topic option KEY=VALUE (repeatable; see 'iggo options topic')")
	create.Flags().StringVar(&copts.durability, "durability", "", "message durability: replicated or persisted (default: server default)")
	create.Flags().StringVar(&copts.offsetDurab, "consumer-offset-durability", "", "consumer offset durability: replicated or persisted")

	var uopts topicOptions
	update := &cobra.Command{
		Use: "update STREAM TOPIC NEW_NAME COMPRESSION [EXPIRY...]", Aliases: []string{"u"},
		Short:   "Rename a topic and change its compression, expiry and max size",
		Example: "  iggo topic update prod orders orders-v2 none\n  iggo topic update prod 0 sensors gzip 30days -m unlimited",
		Args:    cobra.MinimumNArgs(4),
		RunE: func(cmd *cobra.Command, args []string) error {
			sid, err := idArg(args, 0, "stream")
			if err != nil {
				return err
			}
			tid, err := idArg(args, 1, "topic")
			if err != nil {
				return err
			}
			uopts.compression, uopts.expiryArgs = args[3], args[4:]
			opts, err := uopts.build()
			if err != nil {
				return err
			}
			env.Statusf("Executing update topic with ID: %s in stream with ID: %s", idText(tid), idText(sid))
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				if err := c.UpdateTopic(cmd.Context(), wire.UpdateTopic{StreamID: sid, TopicID: tid, Name: args[2], Options: opts}); err != nil {
					return Subject{Stream: idText(sid), Topic: idText(tid), Option: "topic", Sent: sentOptions(opts)}.Wrap(err)
				}
				env.Statusf("Topic with ID: %s in stream with ID: %s updated", idText(tid), idText(sid))
				return nil
			})
		},
	}
	update.Flags().StringVarP(&uopts.maxSize, "max-topic-size", "m", "server_default", "new max topic size such as 15GB or unlimited")

	twoIDs := func(use, alias, short, verb string, f func(c *client.Client, cmd *cobra.Command, sid, tid wire.Identifier) error) *cobra.Command {
		return &cobra.Command{
			Use: use + " STREAM TOPIC", Aliases: []string{alias}, Short: short, Args: cobra.ExactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error {
				sid, err := idArg(args, 0, "stream")
				if err != nil {
					return err
				}
				tid, err := idArg(args, 1, "topic")
				if err != nil {
					return err
				}
				if verb != "" {
					env.Statusf("Executing %s topic with ID: %s in stream with ID: %s", verb, idText(tid), idText(sid))
				}
				return env.withClient(cmd.Context(), func(c *client.Client) error {
					return Subject{Stream: idText(sid), Topic: idText(tid)}.Wrap(f(c, cmd, sid, tid))
				})
			},
		}
	}
	del := twoIDs("delete", "d", "Delete a topic", "delete", func(c *client.Client, cmd *cobra.Command, sid, tid wire.Identifier) error {
		if err := c.DeleteTopic(cmd.Context(), sid, tid); err != nil {
			return err
		}
		env.Statusf("Topic with ID: %s in stream with ID: %s deleted", idText(tid), idText(sid))
		return nil
	})
	purge := twoIDs("purge", "p", "Delete all messages of a topic", "purge", func(c *client.Client, cmd *cobra.Command, sid, tid wire.Identifier) error {
		if err := c.PurgeTopic(cmd.Context(), sid, tid); err != nil {
			return err
		}
		env.Statusf("Topic with ID: %s in stream with ID: %s purged", idText(tid), idText(sid))
		return nil
	})
	get := twoIDs("get", "g", "Show a topic and its partitions", "", func(c *client.Client, cmd *cobra.Command, sid, tid wire.Identifier) error {
		td, err := c.GetTopic(cmd.Context(), sid, tid)
		if err != nil {
			return err
		}
		t := Table{Header: []string{"Property", "Value"}}
		t.Add("Topic id", fmt.Sprint(td.ID))
		t.Add("Created", timeText(td.CreatedAt))
		t.Add("Topic name", td.Name)
		t.Add("Topic size", fmt.Sprintf("%d B", td.SizeBytes))
		comp := compressionText(td.CompressionAlgorithm)
		for _, o := range append(append(wire.Options{}, td.Options...), td.DerivedOptions...) {
			if string(o.Key.Value) == "compression_codec" {
				comp = string(o.Value.Value)
			}
		}
		t.Add("Compression", comp)
		t.Add("Message expiry", FormatExpiry(td.MessageExpiry))
		t.Add("Max topic size", maxSizeText(td.MaxTopicSize))
		t.Add("Topic message count", fmt.Sprint(td.MessagesCount))
		t.Add("Partitions count", fmt.Sprint(td.PartitionsCount))
		if len(td.Options) > 0 {
			t.Add("Options (set)", optionsText(td.Options))
		}
		if len(td.DerivedOptions) > 0 {
			t.Add("Options (defaults)", optionsText(td.DerivedOptions))
		}
		if err := t.Render(env.Out, ListTable); err != nil {
			return err
		}
		if len(td.Partitions) == 0 {
			return nil
		}
		pt := Table{Header: []string{"Partition", "Created", "Segments", "Current offset", "Size (B)", "Messages"}}
		for _, p := range td.Partitions {
			pt.Add(fmt.Sprint(p.ID), timeText(p.CreatedAt), fmt.Sprint(p.SegmentsCount), fmt.Sprint(p.CurrentOffset), fmt.Sprint(p.SizeBytes), fmt.Sprint(p.MessagesCount))
		}
		return pt.Render(env.Out, ListTable)
	})
	var mode string
	list := &cobra.Command{
		Use: "list STREAM", Aliases: []string{"l"}, Short: "List a stream's topics",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sid, err := idArg(args, 0, "stream")
			if err != nil {
				return err
			}
			m, err := listMode(mode)
			if err != nil {
				return err
			}
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				// GET_TOPICS answers an empty list for a missing stream;
				// ask for the stream first so a typo is reported.
				if _, err := c.GetStream(cmd.Context(), sid); err != nil {
					return Subject{Stream: idText(sid)}.Wrap(err)
				}
				topics, err := c.GetTopics(cmd.Context(), sid)
				if err != nil {
					return Subject{Stream: idText(sid)}.Wrap(err)
				}
				if len(topics) == 0 {
					env.Statusf("No topics found!")
					return nil
				}
				t := Table{Header: []string{"ID", "Created", "Name", "Size (B)", "Max Topic Size (B)", "Compression", "Message Expiry", "Messages Count", "Partitions Count"}}
				for _, tp := range topics {
					t.Add(fmt.Sprint(tp.ID), timeText(tp.CreatedAt), tp.Name, fmt.Sprint(tp.SizeBytes), maxSizeText(tp.MaxTopicSize),
						compressionText(tp.CompressionAlgorithm), FormatExpiry(tp.MessageExpiry), fmt.Sprint(tp.MessagesCount), fmt.Sprint(tp.PartitionsCount))
				}
				return t.Render(env.Out, m)
			})
		},
	}
	addListMode(list, &mode)
	return groupCommand("topic", "t", "Topic operations", create, del, update, get, list, purge)
}

func compressionText(c uint8) string {
	switch c {
	case wire.CompressionNone:
		return "none"
	case wire.CompressionGzip:
		return "gzip"
	}
	return "code " + strconv.Itoa(int(c))
}

func maxSizeText(n uint64) string {
	switch n {
	case math.MaxUint64:
		return "unlimited"
	case 0:
		return "server_default"
	}
	return fmt.Sprint(n)
}

func (env *Env) partitionCmd() *cobra.Command {
	mk := func(use, alias, short, verb string, f func(c *client.Client, cmd *cobra.Command, sid, tid wire.Identifier, n uint32) error) *cobra.Command {
		return &cobra.Command{
			Use: use + " STREAM TOPIC COUNT", Aliases: []string{alias}, Short: short, Args: cobra.ExactArgs(3),
			RunE: func(cmd *cobra.Command, args []string) error {
				sid, err := idArg(args, 0, "stream")
				if err != nil {
					return err
				}
				tid, err := idArg(args, 1, "topic")
				if err != nil {
					return err
				}
				n, err := parseU32("partition count", args[2])
				if err != nil || n == 0 {
					return Usagef("invalid partition count %q: want 1 to 1000", args[2])
				}
				env.Statusf("Executing %s %d partitions for topic with ID: %s and stream with ID: %s", verb, n, idText(tid), idText(sid))
				return env.withClient(cmd.Context(), func(c *client.Client) error {
					return Subject{Stream: idText(sid), Topic: idText(tid)}.Wrap(f(c, cmd, sid, tid, n))
				})
			},
		}
	}
	create := mk("create", "c", "Add partitions to a topic", "create", func(c *client.Client, cmd *cobra.Command, sid, tid wire.Identifier, n uint32) error {
		if err := c.CreatePartitions(cmd.Context(), sid, tid, n); err != nil {
			return err
		}
		env.Statusf("Created %d partitions for topic with ID: %s and stream with ID: %s", n, idText(tid), idText(sid))
		return nil
	})
	del := mk("delete", "d", "Remove the highest-numbered partitions of a topic", "delete", func(c *client.Client, cmd *cobra.Command, sid, tid wire.Identifier, n uint32) error {
		if err := c.DeletePartitions(cmd.Context(), sid, tid, n); err != nil {
			return err
		}
		env.Statusf("Deleted %d partitions for topic with ID: %s and stream with ID: %s", n, idText(tid), idText(sid))
		return nil
	})
	return groupCommand("partition", "p", "Partition operations", create, del)
}

func (env *Env) segmentCmd() *cobra.Command {
	del := &cobra.Command{
		Use: "delete STREAM TOPIC PARTITION COUNT", Aliases: []string{"d"}, Short: "Delete the oldest sealed segments of a partition",
		Example: "  iggo segment delete prod orders 0 2",
		Args:    cobra.ExactArgs(4),
		RunE: func(cmd *cobra.Command, args []string) error {
			sid, err := idArg(args, 0, "stream")
			if err != nil {
				return err
			}
			tid, err := idArg(args, 1, "topic")
			if err != nil {
				return err
			}
			pid, err := parseU32("partition", args[2])
			if err != nil {
				return &UsageError{Msg: err.Error()}
			}
			n, err := parseU32("segment count", args[3])
			if err != nil {
				return &UsageError{Msg: err.Error()}
			}
			env.Statusf("Executing delete %d segments for partition %d of topic with ID: %s and stream with ID: %s", n, pid, idText(tid), idText(sid))
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				if err := c.DeleteSegments(cmd.Context(), sid, tid, pid, n); err != nil {
					return Subject{Stream: idText(sid), Topic: idText(tid), Partition: fmt.Sprint(pid)}.Wrap(err)
				}
				env.Statusf("Deleted %d segments for partition %d of topic with ID: %s and stream with ID: %s", n, pid, idText(tid), idText(sid))
				return nil
			})
		},
	}
	return groupCommand("segment", "seg", "Segment operations", del)
}
