package cli

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/wire"
)

// Send batching limits: one request carries at most this many messages or
// bytes of payload, so a large stdin or input file becomes several sends
// that each fit a frame.
const (
	sendBatchMessages = 1000
	sendBatchBytes    = 4 << 20
)

func (env *Env) messageCmd() *cobra.Command {
	return groupCommand("message", "m", "Message operations", env.sendCmd(), env.pollCmd(), env.flushCmd())
}

func (env *Env) sendCmd() *cobra.Command {
	var (
		partition int64
		key       string
		headers   []string
		inputFile string
	)
	cmd := &cobra.Command{
		Use: "send STREAM TOPIC [MESSAGE...]", Aliases: []string{"s"},
		Short: "Send messages to a topic",
		Long: `Send messages to a topic. Each MESSAGE argument is one message; without
arguments every line of standard input is one message (empty lines are
skipped). --input-file replays a file written by "message poll --output-file".
Without -p or -m the server spreads batches over the partitions round robin;
with -m the server routes by XXH32(key) modulo the partition count.`,
		Example: `  iggo message send prod orders hello "second message"
  echo -e "a\nb" | iggo message send prod orders -p 0
  iggo message send prod orders -m user-42 -H source:string:web,version:uint8:2 payload
  iggo message send prod orders-copy --input-file orders.bin`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			sid, err := idArg(args, 0, "stream")
			if err != nil {
				return err
			}
			tid, err := idArg(args, 1, "topic")
			if err != nil {
				return err
			}
			part := wire.Balanced()
			if cmd.Flags().Changed("partition-id") && cmd.Flags().Changed("message-key") {
				return Usagef("give either -p/--partition-id or -m/--message-key, not both")
			}
			if cmd.Flags().Changed("partition-id") {
				if partition < 0 || partition > int64(^uint32(0)) {
					return Usagef("invalid partition id %d", partition)
				}
				part = wire.PartitionByID(uint32(partition))
			}
			if cmd.Flags().Changed("message-key") {
				if key == "" || len(key) > 255 {
					return Usagef("the message key must be 1..255 bytes")
				}
				part = wire.PartitionByKey([]byte(key))
			}
			hdrs, err := ParseHeaders(headers)
			if err != nil {
				return &UsageError{Msg: err.Error(), Hint: "headers are -H key:kind:value, kinds raw, string, bool, int8..int128, uint8..uint128, float32, float64"}
			}
			var msgs []wire.Message
			switch {
			case inputFile != "" && len(args) > 2:
				return Usagef("give messages either as arguments or with --input-file, not both")
			case inputFile != "":
				if len(hdrs) > 0 {
					return Usagef("--input-file keeps each message's own headers; drop -H")
				}
				b, err := os.ReadFile(inputFile)
				if err != nil {
					return localErr("read --input-file: %v", err)
				}
				recs, err := decodeMessageRecords(b)
				if err != nil {
					return localErr("%s is not a message file: %v", inputFile, err)
				}
				for _, r := range recs {
					msgs = append(msgs, wire.Message{ID: r.ID, OriginTimestamp: r.OriginTimestamp, Payload: r.Payload, UserHeaders: r.UserHeaders})
				}
			default:
				payloads := args[2:]
				if len(payloads) == 0 {
					if payloads, err = readLines(env.In); err != nil {
						return localErr("read standard input: %v", err)
					}
				}
				for _, p := range payloads {
					if p == "" {
						continue
					}
					m, err := client.NewMessage([]byte(p), client.WithHeaders(hdrs...))
					if err != nil {
						return Usagef("message %q: %v", p, err)
					}
					msgs = append(msgs, m)
				}
			}
			if len(msgs) == 0 {
				return Usagef("no messages to send: give them as arguments, on standard input, or with --input-file")
			}
			env.Statusf("Executing send messages to topic with ID: %s and stream with ID: %s", idText(tid), idText(sid))
			start := time.Now()
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				sub := Subject{Stream: idText(sid), Topic: idText(tid)}
				if part.Kind == wire.PartitionIDKind {
					sub.Partition = fmt.Sprint(part.PartitionID)
				}
				sent := 0
				placed := map[uint32][2]uint64{}
				for _, batch := range splitBatches(msgs) {
					conf, err := c.SendMessagesServerPartitioned(cmd.Context(), sid, tid, part, batch)
					if err != nil {
						if sent > 0 {
							env.Statusf("Sent %d of %d messages before the error", sent, len(msgs))
						}
						return sub.Wrap(err)
					}
					for _, cf := range conf {
						r, ok := placed[cf.PartitionID]
						last := cf.BaseOffset + uint64(len(batch)) - 1
						if !ok {
							r = [2]uint64{cf.BaseOffset, last}
						}
						r[0], r[1] = min(r[0], cf.BaseOffset), max(r[1], last)
						placed[cf.PartitionID] = r
					}
					sent += len(batch)
				}
				env.Statusf("Sent %s to topic with ID: %s and stream with ID: %s%s, it took %s",
					plural(sent, "message"), idText(tid), idText(sid), placementText(placed), time.Since(start).Round(time.Microsecond))
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.Int64VarP(&partition, "partition-id", "p", 0, "send to this partition (0-based)")
	f.StringVarP(&key, "message-key", "m", "", "route by this key (XXH32(key) mod partitions)")
	f.StringArrayVarP(&headers, "headers", "H", nil, "header key:kind:value, comma-separated or repeated")
	f.StringVar(&inputFile, "input-file", "", "send the messages stored in this file by 'message poll --output-file'")
	return cmd
}

func placementText(placed map[uint32][2]uint64) string {
	if len(placed) == 0 {
		return ""
	}
	ids := make([]int, 0, len(placed))
	for p := range placed {
		ids = append(ids, int(p))
	}
	sort.Ints(ids)
	var parts []string
	for _, p := range ids {
		r := placed[uint32(p)]
		parts = append(parts, fmt.Sprintf("partition %d offsets %d..%d", p, r[0], r[1]))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// splitBatches cuts msgs into sends of at most sendBatchMessages messages
// and sendBatchBytes payload bytes (a single larger message goes alone).
func splitBatches(msgs []wire.Message) [][]wire.Message {
	var out [][]wire.Message
	start, size := 0, 0
	for i, m := range msgs {
		sz := len(m.Payload) + len(m.UserHeaders)
		if i > start && (i-start >= sendBatchMessages || size+sz > sendBatchBytes) {
			out = append(out, msgs[start:i])
			start, size = i, 0
		}
		size += sz
	}
	if start < len(msgs) {
		out = append(out, msgs[start:])
	}
	return out
}

func readLines(in interface{ Read([]byte) (int, error) }) ([]string, error) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), wire.MaxPayloadSize+1)
	var out []string
	for sc.Scan() {
		out = append(out, strings.TrimSuffix(sc.Text(), "\r"))
	}
	return out, sc.Err()
}

func (env *Env) pollCmd() *cobra.Command {
	var (
		offset     uint64
		first      bool
		last       bool
		next       bool
		count      uint32
		autoCommit bool
		consumer   string
		showHdrs   bool
		outputFile string
		hexOut     bool
		format     string
		follow     bool
		wait       time.Duration
	)
	cmd := &cobra.Command{
		Use: "poll STREAM TOPIC PARTITION", Aliases: []string{"p"},
		Short: "Poll messages from a partition",
		Long: `Poll messages from one partition, starting at an offset (-o), the first (-f)
or last (-l) message, or after the consumer's stored offset (-n). Exactly one
start must be given. Payloads print as text (invalid UTF-8 replaced) or, with
--hex, as hex. --output-file appends the messages to a file for replay with
"message send --input-file".

--wait D asks the server to hold a poll that finds nothing for up to D and
answer as soon as a message is committed (iggo's long polling; an Iggy
server answers at once). --follow tails the partition: it keeps polling
with a wait (--wait, 30 s by default) and prints messages as they arrive,
until interrupted; with --auto-commit and --next the consumer's offset
follows too.`,
		Example: `  iggo message poll --offset 0 prod orders 0
  iggo message poll -f -m 10 prod orders 0
  iggo message poll -n -a -c reporting -m 100 prod orders 1
  iggo message poll -f -m 1000 --output-file orders.bin prod orders 0
  iggo message poll -f -m 100 --format payload prod orders 0 > payloads.txt
  iggo message poll --first --follow --format payload prod orders 0
  iggo message poll -n -a -c tail --wait 10s prod orders 0`,
		Args: cobra.ExactArgs(3),
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
			cid, err := ParseIdentifier(consumer)
			if err != nil {
				return Usagef("--consumer: %v", err)
			}
			strategies := 0
			var strat wire.PollingStrategy
			if cmd.Flags().Changed("offset") {
				strategies++
				strat = wire.PollFromOffset(offset)
			}
			if first {
				strategies++
				strat = wire.PollFromFirst()
			}
			if last {
				strategies++
				strat = wire.PollFromLast()
			}
			if next {
				strategies++
				strat = wire.PollFromNext()
			}
			if strategies != 1 {
				return &UsageError{Msg: "give exactly one of --offset N, --first, --last or --next", Hint: "e.g. `iggo message poll --first " + strings.Join(args, " ") + "`"}
			}
			if count == 0 {
				return Usagef("--message-count must be at least 1")
			}
			switch format {
			case "table", "list", "payload":
			default:
				return Usagef("invalid --format %q: want table, list or payload", format)
			}
			if wait < 0 || wait > maxPollWait || (wait > 0 && wait < time.Millisecond) {
				return Usagef("--wait must be between 1ms and %s", maxPollWait)
			}
			if follow && !cmd.Flags().Changed("message-count") {
				count = 1000 // a tail reads what arrived in one poll, not one message per poll
			}
			if follow && outputFile != "" {
				return Usagef("--follow prints messages as they arrive; it cannot be combined with --output-file")
			}
			req := wire.PollMessages{
				Consumer: wire.SingleConsumer(cid), StreamID: sid, TopicID: tid,
				Partition: wire.SomePartition(pid), Strategy: strat, Count: count, AutoCommit: autoCommit,
				WaitMillis: uint32(wait / time.Millisecond),
			}
			if follow {
				env.Statusf("Following partition with ID: %d of topic with ID: %s and stream with ID: %s (interrupt to stop)", pid, idText(tid), idText(sid))
				return env.withClient(cmd.Context(), func(c *client.Client) error {
					err := c.Follow(cmd.Context(), req, func(polled wire.PolledMessages) error {
						return renderMessages(env, polled.Messages(), format, hexOut, showHdrs)
					})
					if errors.Is(err, context.Canceled) {
						return nil
					}
					if err != nil {
						return Subject{Stream: idText(sid), Topic: idText(tid), Partition: fmt.Sprint(pid), Consumer: idText(cid)}.Wrap(err)
					}
					return nil
				})
			}
			env.Statusf("Executing poll messages from topic with ID: %s and stream with ID: %s", idText(tid), idText(sid))
			start := time.Now()
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				polled, err := c.PollMessages(cmd.Context(), req)
				if err != nil {
					return Subject{Stream: idText(sid), Topic: idText(tid), Partition: fmt.Sprint(pid), Consumer: idText(cid)}.Wrap(err)
				}
				msgs := polled.Messages()
				var size int
				for _, m := range msgs {
					size += len(m.Payload) + len(m.UserHeaders)
				}
				env.Statusf("Polled messages from topic with ID: %s and stream with ID: %s (from partition with ID: %d)", idText(tid), idText(sid), polled.PartitionID)
				env.Statusf("Polled %s of total size %s, it took %s", plural(len(msgs), "message"), FormatBytes(uint64(size)), time.Since(start).Round(time.Microsecond))
				if outputFile != "" {
					var buf []byte
					for _, m := range msgs {
						buf = appendMessageRecord(buf, m)
					}
					f, err := os.OpenFile(outputFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
					if err != nil {
						return localErr("open --output-file: %v", err)
					}
					if _, err := f.Write(buf); err != nil {
						f.Close()
						return localErr("write %s: %v", outputFile, err)
					}
					if err := f.Close(); err != nil {
						return localErr("write %s: %v", outputFile, err)
					}
					env.Statusf("Stored %s of total size %s to %s", plural(len(msgs), "message"), FormatBytes(uint64(len(buf))), outputFile)
					return nil
				}
				return renderMessages(env, msgs, format, hexOut, showHdrs)
			})
		},
	}
	f := cmd.Flags()
	f.Uint64VarP(&offset, "offset", "o", 0, "start at this offset")
	f.BoolVarP(&first, "first", "f", false, "start at the first message")
	f.BoolVarP(&last, "last", "l", false, "the last --message-count messages")
	f.BoolVarP(&next, "next", "n", false, "start after the consumer's stored offset")
	f.Uint32VarP(&count, "message-count", "m", 1, "how many messages to poll at most (per poll; 1000 with --follow)")
	f.BoolVarP(&autoCommit, "auto-commit", "a", false, "store the offset of the last polled message for the consumer")
	f.StringVarP(&consumer, "consumer", "c", "0", "consumer id or name (offsets are kept per consumer)")
	f.BoolVarP(&showHdrs, "show-headers", "s", false, "add a column per message header")
	f.StringVar(&outputFile, "output-file", "", "append the polled messages to this file instead of printing them")
	f.BoolVarP(&hexOut, "hex", "x", false, "print payloads as hex")
	f.StringVar(&format, "format", "table", "table, list (|-separated lines) or payload (one payload per line)")
	f.BoolVarP(&follow, "follow", "F", false, "keep polling and print messages as they arrive (long polling)")
	f.DurationVarP(&wait, "wait", "w", 0, "hold an empty poll on the server up to this long for a message (iggo long polling)")
	return cmd
}

// maxPollWait is the longest --wait the wire extension carries (u32 ms).
const maxPollWait = time.Duration(1<<32-1) * time.Millisecond

type headerCol struct {
	key  string
	kind wire.HeaderKind
}

func renderMessages(env *Env, msgs []wire.PolledMessage, format string, hexOut, showHdrs bool) error {
	payload := func(b []byte) string {
		if hexOut {
			return hex.EncodeToString(b)
		}
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	if format == "payload" {
		var b strings.Builder
		for _, m := range msgs {
			b.WriteString(payload(m.Payload))
			b.WriteByte('\n')
		}
		_, err := fmt.Fprint(env.Out, b.String())
		return err
	}
	var cols []headerCol
	decoded := make([][]wire.HeaderEntry, len(msgs))
	if showHdrs {
		seen := map[headerCol]bool{}
		for i, m := range msgs {
			if len(m.UserHeaders) == 0 {
				continue
			}
			hs, err := wire.DecodeUserHeaders(m.UserHeaders)
			if err != nil {
				continue
			}
			decoded[i] = hs
			for _, h := range hs {
				c := headerCol{string(h.Key.Value), h.Value.Kind}
				if !seen[c] {
					seen[c] = true
					cols = append(cols, c)
				}
			}
		}
		sort.Slice(cols, func(i, j int) bool {
			if cols[i].key != cols[j].key {
				return cols[i].key < cols[j].key
			}
			return cols[i].kind < cols[j].kind
		})
	}
	t := Table{Header: []string{"Offset", "Timestamp", "ID", "Length", "Payload"}}
	for _, c := range cols {
		t.Header = append(t.Header, "Header: "+c.key+"\n"+c.kind.String())
	}
	for i, m := range msgs {
		row := []string{fmt.Sprint(m.Offset), timeTextMicro(m.Timestamp), u128Text(m.ID), fmt.Sprint(len(m.Payload)), payload(m.Payload)}
		for _, c := range cols {
			v := ""
			for _, h := range decoded[i] {
				if string(h.Key.Value) == c.key && h.Value.Kind == c.kind {
					v = HeaderValueText(h.Value)
				}
			}
			row = append(row, v)
		}
		t.Add(row...)
	}
	mode := ListTable
	if format == "list" {
		mode = ListList
	}
	return t.Render(env.Out, mode)
}

func (env *Env) flushCmd() *cobra.Command {
	var fsync bool
	cmd := &cobra.Command{
		Use: "flush STREAM TOPIC PARTITION", Aliases: []string{"f"},
		Short: "Flush a partition's unsaved messages to disk",
		Args:  cobra.ExactArgs(3),
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
			env.Statusf("Executing flush messages of partition %d of topic with ID: %s and stream with ID: %s", pid, idText(tid), idText(sid))
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				if err := c.FlushUnsavedBuffer(cmd.Context(), sid, tid, pid, fsync); err != nil {
					return Subject{Stream: idText(sid), Topic: idText(tid), Partition: fmt.Sprint(pid), Flush: true}.Wrap(err)
				}
				env.Statusf("Flushed messages of partition %d of topic with ID: %s and stream with ID: %s", pid, idText(tid), idText(sid))
				return nil
			})
		},
	}
	cmd.Flags().BoolVarP(&fsync, "fsync", "f", false, "also fsync the flushed data")
	return cmd
}
