package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/wire"
)

func (env *Env) groupCmd() *cobra.Command {
	threeIDs := func(args []string) (sid, tid wire.Identifier, err error) {
		if sid, err = idArg(args, 0, "stream"); err != nil {
			return
		}
		tid, err = idArg(args, 1, "topic")
		return
	}
	create := &cobra.Command{
		Use: "create STREAM TOPIC NAME", Aliases: []string{"c"}, Short: "Create a consumer group",
		Example: "  iggo consumer-group create prod orders billing",
		Args:    cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			sid, tid, err := threeIDs(args)
			if err != nil {
				return err
			}
			name := args[2]
			env.Statusf("Executing create consumer group with name: %s for topic with ID: %s and stream with ID: %s", name, idText(tid), idText(sid))
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				g, err := c.CreateConsumerGroup(cmd.Context(), sid, tid, name)
				if err != nil {
					return Subject{Stream: idText(sid), Topic: idText(tid), Group: "'" + name + "'"}.Wrap(err)
				}
				env.Statusf("Consumer group with name: %s and ID: %d created for topic with ID: %s and stream with ID: %s", g.Name, g.ID, idText(tid), idText(sid))
				return nil
			})
		},
	}
	withGroup := func(use, alias, short string, f func(c *client.Client, cmd *cobra.Command, sid, tid, gid wire.Identifier) error) *cobra.Command {
		return &cobra.Command{
			Use: use + " STREAM TOPIC GROUP", Aliases: []string{alias}, Short: short, Args: cobra.ExactArgs(3),
			RunE: func(cmd *cobra.Command, args []string) error {
				sid, tid, err := threeIDs(args)
				if err != nil {
					return err
				}
				gid, err := idArg(args, 2, "consumer group")
				if err != nil {
					return err
				}
				return env.withClient(cmd.Context(), func(c *client.Client) error {
					return Subject{Stream: idText(sid), Topic: idText(tid), Group: idText(gid)}.Wrap(f(c, cmd, sid, tid, gid))
				})
			},
		}
	}
	del := withGroup("delete", "d", "Delete a consumer group", func(c *client.Client, cmd *cobra.Command, sid, tid, gid wire.Identifier) error {
		env.Statusf("Executing delete consumer group with ID: %s for topic with ID: %s and stream with ID: %s", idText(gid), idText(tid), idText(sid))
		if err := c.DeleteConsumerGroup(cmd.Context(), sid, tid, gid); err != nil {
			return err
		}
		env.Statusf("Consumer group with ID: %s deleted for topic with ID: %s and stream with ID: %s", idText(gid), idText(tid), idText(sid))
		return nil
	})
	get := withGroup("get", "g", "Show a consumer group and its members", func(c *client.Client, cmd *cobra.Command, sid, tid, gid wire.Identifier) error {
		g, err := c.GetConsumerGroup(cmd.Context(), sid, tid, gid)
		if err != nil {
			return err
		}
		t := Table{Header: []string{"Property", "Value"}}
		t.Add("Consumer group ID", fmt.Sprint(g.ID))
		t.Add("Consumer group name", g.Name)
		t.Add("Partitions count", fmt.Sprint(g.PartitionsCount))
		t.Add("Members count", fmt.Sprint(g.MembersCount))
		for _, m := range g.Members {
			t.Add(fmt.Sprintf("Member %d partitions", m.ID), joinU32(m.Partitions))
		}
		return t.Render(env.Out, ListTable)
	})
	var mode string
	list := &cobra.Command{
		Use: "list STREAM TOPIC", Aliases: []string{"l"}, Short: "List a topic's consumer groups", Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			sid, tid, err := threeIDs(args)
			if err != nil {
				return err
			}
			m, err := listMode(mode)
			if err != nil {
				return err
			}
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				groups, err := c.GetConsumerGroups(cmd.Context(), sid, tid)
				if err != nil {
					return Subject{Stream: idText(sid), Topic: idText(tid)}.Wrap(err)
				}
				if len(groups) == 0 {
					env.Statusf("No consumer groups found!")
					return nil
				}
				t := Table{Header: []string{"ID", "Name", "Partitions Count", "Members Count"}}
				for _, g := range groups {
					t.Add(fmt.Sprint(g.ID), g.Name, fmt.Sprint(g.PartitionsCount), fmt.Sprint(g.MembersCount))
				}
				return t.Render(env.Out, m)
			})
		},
	}
	addListMode(list, &mode)
	return groupCommand("consumer-group", "g", "Consumer group operations", create, del, get, list)
}

func joinU32(v []uint32) string {
	if len(v) == 0 {
		return "-"
	}
	parts := make([]string, len(v))
	for i, p := range v {
		parts[i] = fmt.Sprint(p)
	}
	return strings.Join(parts, ", ")
}

func (env *Env) offsetCmd() *cobra.Command {
	type target struct {
		consumer wire.Consumer
		sid, tid wire.Identifier
		pid      uint32
		sub      Subject
	}
	parse := func(args []string, kind string) (target, error) {
		var t target
		cid, err := idArg(args, 0, "consumer")
		if err != nil {
			return t, err
		}
		switch kind {
		case "consumer":
			t.consumer = wire.SingleConsumer(cid)
		case "consumer-group", "group":
			t.consumer = wire.GroupConsumer(cid)
		default:
			return t, Usagef("invalid --kind %q: want consumer or consumer-group", kind)
		}
		if t.sid, err = idArg(args, 1, "stream"); err != nil {
			return t, err
		}
		if t.tid, err = idArg(args, 2, "topic"); err != nil {
			return t, err
		}
		if t.pid, err = parseU32("partition", args[3]); err != nil {
			return t, &UsageError{Msg: err.Error()}
		}
		t.sub = Subject{Stream: idText(t.sid), Topic: idText(t.tid), Partition: fmt.Sprint(t.pid), Consumer: idText(cid)}
		if t.consumer.Kind == wire.ConsumerKindGroup {
			t.sub.Group = idText(cid)
		}
		return t, nil
	}
	var getKind, setKind, delKind string
	get := &cobra.Command{
		Use: "get CONSUMER STREAM TOPIC PARTITION", Aliases: []string{"g"}, Short: "Show a consumer's stored offset",
		Example: "  iggo consumer-offset get reporting prod orders 0\n  iggo consumer-offset get billing prod orders 0 -k consumer-group",
		Args:    cobra.ExactArgs(4),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := parse(args, getKind)
			if err != nil {
				return err
			}
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				info, err := c.GetConsumerOffset(cmd.Context(), t.consumer, t.sid, t.tid, wire.SomePartition(t.pid))
				if err != nil {
					return t.sub.Wrap(err)
				}
				if info == nil {
					env.Statusf("No offset stored for consumer %s on partition %d of topic with ID: %s and stream with ID: %s", t.sub.Consumer, t.pid, idText(t.tid), idText(t.sid))
					return nil
				}
				tb := Table{Header: []string{"Property", "Value"}}
				tb.Add("Consumer", t.sub.Consumer)
				tb.Add("Stream", idText(t.sid))
				tb.Add("Topic", idText(t.tid))
				tb.Add("Partition", fmt.Sprint(info.PartitionID))
				tb.Add("Current offset", fmt.Sprint(info.CurrentOffset))
				tb.Add("Stored offset", fmt.Sprint(info.StoredOffset))
				left := uint64(0)
				if info.CurrentOffset > info.StoredOffset {
					left = info.CurrentOffset - info.StoredOffset
				}
				tb.Add("Left to process", fmt.Sprint(left))
				return tb.Render(env.Out, ListTable)
			})
		},
	}
	get.Flags().StringVarP(&getKind, "kind", "k", "consumer", "consumer or consumer-group")
	set := &cobra.Command{
		Use: "set CONSUMER STREAM TOPIC PARTITION OFFSET", Aliases: []string{"s"}, Short: "Store a consumer's offset",
		Example: "  iggo consumer-offset set reporting prod orders 0 41",
		Args:    cobra.ExactArgs(5),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := parse(args, setKind)
			if err != nil {
				return err
			}
			off, err := parseU64("offset", args[4])
			if err != nil {
				return &UsageError{Msg: err.Error()}
			}
			t.sub.Offset = args[4]
			env.Statusf("Executing set offset %d for consumer %s on partition %d of topic with ID: %s and stream with ID: %s", off, t.sub.Consumer, t.pid, idText(t.tid), idText(t.sid))
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				if err := c.StoreConsumerOffset(cmd.Context(), t.consumer, t.sid, t.tid, wire.SomePartition(t.pid), off); err != nil {
					return t.sub.Wrap(err)
				}
				env.Statusf("Offset %d stored for consumer %s on partition %d", off, t.sub.Consumer, t.pid)
				return nil
			})
		},
	}
	set.Flags().StringVarP(&setKind, "kind", "k", "consumer", "consumer or consumer-group")
	del := &cobra.Command{
		Use: "delete CONSUMER STREAM TOPIC PARTITION", Aliases: []string{"d"}, Short: "Delete a consumer's stored offset",
		Args: cobra.ExactArgs(4),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := parse(args, delKind)
			if err != nil {
				return err
			}
			env.Statusf("Executing delete offset for consumer %s on partition %d of topic with ID: %s and stream with ID: %s", t.sub.Consumer, t.pid, idText(t.tid), idText(t.sid))
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				if err := c.DeleteConsumerOffset(cmd.Context(), t.consumer, t.sid, t.tid, wire.SomePartition(t.pid)); err != nil {
					return t.sub.Wrap(err)
				}
				env.Statusf("Offset deleted for consumer %s on partition %d", t.sub.Consumer, t.pid)
				return nil
			})
		},
	}
	del.Flags().StringVarP(&delKind, "kind", "k", "consumer", "consumer or consumer-group")
	return groupCommand("consumer-offset", "o", "Consumer offset operations", get, set, del)
}
