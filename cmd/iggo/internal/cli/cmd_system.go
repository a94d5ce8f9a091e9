package cli

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/wire"
)

func (env *Env) pingCmd() *cobra.Command {
	var (
		count    uint32
		interval time.Duration
	)
	cmd := &cobra.Command{
		Use: "ping", Short: "Check that the server answers, and how fast",
		Long: "Ping the server (no login needed) and print each round-trip time.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if count == 0 {
				return Usagef("--count must be at least 1")
			}
			c, err := env.connectNoLogin(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			var minD, maxD, sum time.Duration
			for i := uint32(0); i < count; i++ {
				if i > 0 {
					select {
					case <-time.After(interval):
					case <-cmd.Context().Done():
						return cmd.Context().Err()
					}
				}
				start := time.Now()
				if err := c.Ping(cmd.Context()); err != nil {
					return err
				}
				d := time.Since(start)
				if i == 0 || d < minD {
					minD = d
				}
				maxD = max(maxD, d)
				sum += d
				fmt.Fprintf(env.Out, "Ping time: %.3f ms\n", ms(d))
			}
			if count > 1 {
				fmt.Fprintf(env.Out, "Ping statistics for %s: %d pings, min/avg/max = %.3f/%.3f/%.3f ms\n",
					env.Global.Address, count, ms(minD), ms(sum/time.Duration(count)), ms(maxD))
			}
			return nil
		},
	}
	cmd.Flags().Uint32VarP(&count, "count", "c", 1, "number of pings")
	cmd.Flags().DurationVarP(&interval, "interval", "i", time.Second, "pause between pings")
	return cmd
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func transportText(t uint8) string {
	switch t {
	case wire.TransportTCP:
		return "TCP"
	case wire.TransportQUIC:
		return "QUIC"
	case wire.TransportHTTP:
		return "HTTP"
	case wire.TransportWebSocket:
		return "WebSocket"
	}
	return fmt.Sprintf("transport %d", t)
}

func (env *Env) meCmd() *cobra.Command {
	return &cobra.Command{
		Use: "me", Short: "Show this connection's client record", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				d, err := c.GetMe(cmd.Context())
				if err != nil {
					return err
				}
				return clientTable(d).Render(env.Out, ListTable)
			})
		},
	}
}

func clientTable(d wire.ClientDetails) *Table {
	t := &Table{Header: []string{"Property", "Value"}}
	t.Add("Client ID", fmt.Sprint(d.ClientID))
	t.Add("User ID", fmt.Sprint(d.UserID))
	t.Add("Address", d.Address)
	t.Add("Transport", transportText(d.Transport))
	t.Add("Consumer groups count", fmt.Sprint(d.ConsumerGroupsCount))
	for _, g := range d.Groups {
		t.Add("Consumer group", fmt.Sprintf("stream %d, topic %d, group %d", g.StreamID, g.TopicID, g.GroupID))
	}
	return t
}

func (env *Env) clientCmd() *cobra.Command {
	get := &cobra.Command{
		Use: "get CLIENT_ID", Aliases: []string{"g"}, Short: "Show a connected client", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseU32("client id", args[0])
			if err != nil {
				return &UsageError{Msg: err.Error()}
			}
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				d, err := c.GetClient(cmd.Context(), id)
				if err != nil {
					return Subject{Client: args[0]}.Wrap(err)
				}
				return clientTable(d).Render(env.Out, ListTable)
			})
		},
	}
	var mode string
	list := &cobra.Command{
		Use: "list", Aliases: []string{"l"}, Short: "List connected clients", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := listMode(mode)
			if err != nil {
				return err
			}
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				clients, err := c.GetClients(cmd.Context())
				if err != nil {
					return err
				}
				if len(clients) == 0 {
					env.Statusf("No clients found!")
					return nil
				}
				t := Table{Header: []string{"Client ID", "User ID", "Address", "Transport", "Consumer Groups"}}
				for _, ci := range clients {
					t.Add(fmt.Sprint(ci.ClientID), fmt.Sprint(ci.UserID), ci.Address, transportText(ci.Transport), fmt.Sprint(ci.ConsumerGroupsCount))
				}
				return t.Render(env.Out, m)
			})
		},
	}
	addListMode(list, &mode)
	return groupCommand("client", "c", "Connected client operations", get, list)
}

func roleText(r uint8) string {
	if r == wire.RoleLeader {
		return "leader"
	}
	return "follower"
}

func nodeStatusText(s uint8) string {
	switch s {
	case wire.NodeHealthy:
		return "healthy"
	case wire.NodeStarting:
		return "starting"
	case wire.NodeStopping:
		return "stopping"
	case wire.NodeUnreachable:
		return "unreachable"
	case wire.NodeMaintenance:
		return "maintenance"
	}
	return fmt.Sprintf("status %d", s)
}

// clusterCmd is `iggo cluster`; local cluster management (up, down,
// status) is added by an Extension with Parent "cluster".
func (env *Env) clusterCmd() *cobra.Command {
	var mode string
	md := &cobra.Command{
		Use: "metadata", Aliases: []string{"m"}, Short: "Show the cluster's nodes as the server reports them", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := listMode(mode)
			if err != nil {
				return err
			}
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				md, err := c.GetClusterMetadata(cmd.Context())
				if err != nil {
					return err
				}
				env.Statusf("Cluster name: %s", md.Name)
				t := Table{Header: []string{"Name", "IP", "TCP", "QUIC", "HTTP", "WebSocket", "Role", "Status"}}
				for _, n := range md.Nodes {
					t.Add(n.Name, n.IP, fmt.Sprint(n.TCPPort), fmt.Sprint(n.QUICPort), fmt.Sprint(n.HTTPPort), fmt.Sprint(n.WSPort), roleText(n.Role), nodeStatusText(n.Status))
				}
				return t.Render(env.Out, m)
			})
		},
	}
	addListMode(md, &mode)
	return groupCommand("cluster", "cl", "Cluster operations", md)
}

// statsView is the stats reply with stable JSON/TOML names.
type statsView struct {
	ProcessID         uint32  `json:"process_id" toml:"process_id"`
	CPUUsage          float32 `json:"cpu_usage" toml:"cpu_usage"`
	TotalCPUUsage     float32 `json:"total_cpu_usage" toml:"total_cpu_usage"`
	MemoryUsage       uint64  `json:"memory_usage" toml:"memory_usage"`
	TotalMemory       uint64  `json:"total_memory" toml:"total_memory"`
	AvailableMemory   uint64  `json:"available_memory" toml:"available_memory"`
	RunTimeSecs       uint64  `json:"run_time" toml:"run_time"`
	StartTime         string  `json:"start_time" toml:"start_time"`
	ReadBytes         uint64  `json:"read_bytes" toml:"read_bytes"`
	WrittenBytes      uint64  `json:"written_bytes" toml:"written_bytes"`
	MessagesSizeBytes uint64  `json:"messages_size_bytes" toml:"messages_size_bytes"`
	// MessagesOriginal is the size before compression at rest (iggo's
	// stats extension; absent from an Iggy server).
	MessagesOriginal    *uint64 `json:"messages_original_size_bytes,omitempty" toml:"messages_original_size_bytes,omitempty"`
	StreamsCount        uint32  `json:"streams_count" toml:"streams_count"`
	TopicsCount         uint32  `json:"topics_count" toml:"topics_count"`
	PartitionsCount     uint32  `json:"partitions_count" toml:"partitions_count"`
	SegmentsCount       uint32  `json:"segments_count" toml:"segments_count"`
	MessagesCount       uint64  `json:"messages_count" toml:"messages_count"`
	ClientsCount        uint32  `json:"clients_count" toml:"clients_count"`
	ConsumerGroupsCount uint32  `json:"consumer_groups_count" toml:"consumer_groups_count"`
	ThreadsCount        uint32  `json:"threads_count" toml:"threads_count"`
	FreeDiskSpace       uint64  `json:"free_disk_space" toml:"free_disk_space"`
	TotalDiskSpace      uint64  `json:"total_disk_space" toml:"total_disk_space"`
	Hostname            string  `json:"hostname" toml:"hostname"`
	OSName              string  `json:"os_name" toml:"os_name"`
	OSVersion           string  `json:"os_version" toml:"os_version"`
	KernelVersion       string  `json:"kernel_version" toml:"kernel_version"`
	ServerVersion       string  `json:"iggy_server_version" toml:"iggy_server_version"`
}

// StatsView converts the wire stats for printing and reports.
func StatsView(s wire.Stats) statsView {
	return statsView{
		ProcessID: s.ProcessID, CPUUsage: s.CPUUsage, TotalCPUUsage: s.TotalCPUUsage,
		MemoryUsage: s.MemoryUsage, TotalMemory: s.TotalMemory, AvailableMemory: s.AvailableMemory,
		RunTimeSecs: s.RunTime / 1_000_000, StartTime: time.UnixMicro(int64(s.StartTime)).UTC().Format(time.RFC3339),
		ReadBytes: s.ReadBytes, WrittenBytes: s.WrittenBytes, MessagesSizeBytes: s.MessagesSizeBytes,
		StreamsCount: s.StreamsCount, TopicsCount: s.TopicsCount, PartitionsCount: s.PartitionsCount, SegmentsCount: s.Segments,
		MessagesCount: s.MessagesCount, ClientsCount: s.ClientsCount, ConsumerGroupsCount: s.ConsumerGroupsCount,
		ThreadsCount: s.ThreadsCount, FreeDiskSpace: s.FreeDiskSpace, TotalDiskSpace: s.TotalDiskSpace,
		Hostname: s.Hostname, OSName: s.OSName, OSVersion: s.OSVersion, KernelVersion: s.KernelVersion, ServerVersion: s.Version,
		MessagesOriginal: originalSize(s),
	}
}

func originalSize(s wire.Stats) *uint64 {
	if !s.Extended {
		return nil
	}
	v := s.MessagesOriginalSizeBytes
	return &v
}

func (v statsView) properties() []Property {
	props := []Property{
		{"Iggy Server PID", fmt.Sprint(v.ProcessID)},
		{"Iggy Server CPU Usage", fmt.Sprintf("%.4f %%", v.CPUUsage)},
		{"Total CPU Usage", fmt.Sprintf("%.4f %%", v.TotalCPUUsage)},
		{"Iggy Server Memory Usage", fmt.Sprint(v.MemoryUsage)},
		{"Total Memory (RAM)", fmt.Sprint(v.TotalMemory)},
		{"Available Memory (RAM)", fmt.Sprint(v.AvailableMemory)},
		{"Iggy Server Run Time", fmt.Sprint(v.RunTimeSecs)},
		{"Start Time (UTC)", v.StartTime},
		{"Read Bytes", fmt.Sprint(v.ReadBytes)},
		{"Written Bytes", fmt.Sprint(v.WrittenBytes)},
		{"Messages Size Bytes", fmt.Sprint(v.MessagesSizeBytes)},
	}
	if v.MessagesOriginal != nil {
		props = append(props, Property{"Messages Original Size Bytes", fmt.Sprint(*v.MessagesOriginal)})
	}
	return append(props, []Property{
		{"Streams Count", fmt.Sprint(v.StreamsCount)},
		{"Topics Count", fmt.Sprint(v.TopicsCount)},
		{"Partitions Count", fmt.Sprint(v.PartitionsCount)},
		{"Segments Count", fmt.Sprint(v.SegmentsCount)},
		{"Message Count", fmt.Sprint(v.MessagesCount)},
		{"Clients Count", fmt.Sprint(v.ClientsCount)},
		{"Consumer Groups Count", fmt.Sprint(v.ConsumerGroupsCount)},
		{"Threads Count", fmt.Sprint(v.ThreadsCount)},
		{"Free Disk Space", fmt.Sprint(v.FreeDiskSpace)},
		{"Total Disk Space", fmt.Sprint(v.TotalDiskSpace)},
		{"OS Name", v.OSName},
		{"OS Version", v.OSVersion},
		{"Kernel Version", v.KernelVersion},
		{"Iggy Server Version", v.ServerVersion},
	}...)
}

func (env *Env) statsCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use: "stats", Short: "Show server statistics", Args: cobra.NoArgs,
		Example: "  iggo stats\n  iggo stats -o json",
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := ParseOutputFormat(output)
			if err != nil {
				return &UsageError{Msg: err.Error()}
			}
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				s, err := c.GetStatsExtended(cmd.Context())
				if wire.HasCode(err, wire.CodeInvalidCommand) {
					s, err = c.GetStats(cmd.Context()) // a server without iggo's stats extension
				}
				if err != nil {
					return err
				}
				v := StatsView(s)
				return renderProperties(env.Out, f, [2]string{"Server property", "Value"}, v.properties(), v)
			})
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table, list, json or toml")
	return cmd
}

var snapshotCompressions = map[string]uint8{
	"stored": wire.SnapshotStored, "deflated": wire.SnapshotDeflated, "bzip2": wire.SnapshotBzip2,
	"zstd": wire.SnapshotZstd, "lzma": wire.SnapshotLzma, "xz": wire.SnapshotXz,
}

var snapshotTypes = map[string]uint8{
	"filesystem_overview": wire.SnapshotFilesystemOverview, "process_list": wire.SnapshotProcessList,
	"resource_usage": wire.SnapshotResourceUsage, "test": wire.SnapshotTest, "server_logs": wire.SnapshotServerLogs,
	"server_config": wire.SnapshotServerConfig, "all": wire.SnapshotAll,
}

func (env *Env) snapshotCmd() *cobra.Command {
	var (
		compression string
		types       []string
		outDir      string
	)
	cmd := &cobra.Command{
		Use: "snapshot", Short: "Download a ZIP of server diagnostics",
		Example: "  iggo snapshot\n  iggo snapshot -c zstd -s server_logs,server_config -o /tmp",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			comp, ok := snapshotCompressions[strings.ToLower(compression)]
			if !ok {
				return Usagef("invalid compression %q: want stored, deflated, bzip2, zstd, lzma or xz", compression)
			}
			var tcodes []uint8
			for _, t := range types {
				for _, one := range splitList(t) {
					code, ok := snapshotTypes[one]
					if !ok {
						return Usagef("invalid snapshot type %q: want filesystem_overview, process_list, resource_usage, test, server_logs, server_config or all", one)
					}
					tcodes = append(tcodes, code)
				}
			}
			if len(tcodes) == 0 {
				tcodes = []uint8{wire.SnapshotAll}
			}
			env.Statusf("Executing snapshot with compression: %s", compression)
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				z, err := c.GetSnapshot(cmd.Context(), comp, tcodes)
				if err != nil {
					return err
				}
				path := filepath.Join(outDir, "snapshot_"+time.Now().UTC().Format("20060102_150405")+".zip")
				if err := os.MkdirAll(outDir, 0o755); err != nil {
					return localErr("create %s: %v", outDir, err)
				}
				if err := os.WriteFile(path, z, 0o644); err != nil {
					return localErr("write %s: %v", path, err)
				}
				env.Statusf("Snapshot stored in %s (%s)", path, FormatBytes(uint64(len(z))))
				return nil
			})
		},
	}
	cmd.Flags().StringVarP(&compression, "compression", "c", "deflated", "stored, deflated, bzip2, zstd, lzma or xz")
	cmd.Flags().StringSliceVarP(&types, "snapshot-types", "s", nil, "what to include (comma-separated; default all)")
	cmd.Flags().StringVarP(&outDir, "out-dir", "o", ".", "directory for the ZIP file")
	return cmd
}

func (env *Env) optionsCmd() *cobra.Command {
	return &cobra.Command{
		Use: "options topic|stream|user", Short: "List the options a resource's create command accepts",
		Long: "Print the server's option catalog for one scope: every key, its kind, default and what it means. These are the keys `topic create --set` takes.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var scope wire.OptionsScope
			switch strings.ToLower(args[0]) {
			case "topic":
				scope = wire.ScopeTopic
			case "stream":
				scope = wire.ScopeStream
			case "user":
				scope = wire.ScopeUser
			default:
				return Usagef("invalid scope %q: want topic, stream or user", args[0])
			}
			return env.withClient(cmd.Context(), func(c *client.Client) error {
				ds, err := c.DescribeOptions(cmd.Context(), scope)
				if err != nil {
					return err
				}
				if len(ds) == 0 {
					env.Statusf("The server accepts no %s options.", strings.ToLower(args[0]))
					return nil
				}
				t := Table{Header: []string{"Key", "Kind", "Default", "Description"}}
				for _, d := range ds {
					t.Add(d.Key, d.Kind.String(), defaultText(d.Key, d.Kind, d.Default), d.Description)
				}
				return t.Render(env.Out, ListTable)
			})
		},
	}
}

func defaultText(key string, kind wire.HeaderKind, b []byte) string {
	switch kind {
	case wire.KindUint64:
		if len(b) == 8 {
			n := binary.LittleEndian.Uint64(b)
			if n == math.MaxUint64 {
				return "unlimited"
			}
			if key == wire.OptMessageExpiry {
				return FormatExpiry(n)
			}
			return fmt.Sprint(n)
		}
	}
	if len(b) == 0 {
		return "-"
	}
	return HeaderValueText(wire.HeaderValue{Kind: kind, Value: b})
}
