package peers

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
)

func nan() float64 { return math.NaN() }

func numCPU() int { return runtime.NumCPU() }

// thousands formats n with comma separators: 1234567 -> "1,234,567".
func thousands(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func rate(f Figure) string {
	if f.Err != "" {
		return "failed"
	}
	return thousands(uint64(math.Round(f.MsgsPerSec)))
}

func latencies(f Figure) string {
	if f.Err != "" {
		return "–"
	}
	return fmt.Sprintf("%.1f / %.1f", f.P50Ms, f.P99Ms)
}

func ratio(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return fmt.Sprintf("%.1fx", v)
}

// jsSetup describes the JetStream side of a row.
func jsSetup(setup, durability string) string {
	r := "R1"
	if setup == SetupCluster {
		r = "R3"
	}
	return r + " file store, " + jsSyncTitle(durability)
}

// Markdown renders the comparison: a line on what ran, the disk, the
// table, the persisted single-node rate against the disk, and failures.
func (r *CompareResult) Markdown() string {
	var b strings.Builder
	modes := make([]string, len(r.Modes))
	for i, m := range r.Modes {
		modes[i] = fmt.Sprintf("`nats bench js pub %s --batch %d`", m.Name, m.Batch)
	}
	fmt.Fprintf(&b, "Measured %s on %s (%d cores); nats-server %s, nats CLI %s; %d-byte messages; iggo: `iggo bench pp`, batches of %d; JetStream: %s.\n\n",
		r.Started.Format("2006-01-02 15:04 UTC"), r.Host, r.Cores, r.NATSServerVersion, r.NATSCLIVersion, r.MessageSize, r.BatchSize, strings.Join(modes, ", "))
	if r.Disk != nil {
		fmt.Fprintf(&b, "Disk: %s MiB in %s MiB writes, each followed by fdatasync: %.1f MB/s; with each synced write's pages released from the page cache: %.1f MB/s (load %.2f).\n\n",
			thousands(r.Disk.Bytes>>20), thousands(r.Disk.Chunk>>20), r.Disk.MBps, r.Disk.ReleasedMBps, r.Disk.Load)
	}
	b.WriteString("| Setup | iggo durability | JetStream | Producers | Messages | iggo msgs/s | iggo p50 / p99 ms |")
	sep := "|---|---|---|---|---|---|---|"
	for _, m := range r.Modes {
		fmt.Fprintf(&b, " %s msgs/s | p50 / p99 ms | iggo / JetStream |", m.Label())
		sep += "---|---|---|"
	}
	best := len(r.Modes) > 1
	if best {
		b.WriteString(" iggo / best JetStream |")
		sep += "---|"
	}
	b.WriteString(" load avg (iggo; JetStream) |\n")
	b.WriteString(sep + "---|\n")
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %s | %s |", setupTitle(row.Setup), row.Durability, jsSetup(row.Setup, row.Durability),
			row.Producers, thousands(row.Messages), rate(row.Iggo), latencies(row.Iggo))
		loads := make([]string, len(row.JetStream))
		for i, f := range row.JetStream {
			fmt.Fprintf(&b, " %s | %s | %s |", rate(f), latencies(f), ratio(row.Ratio(i)))
			loads[i] = fmt.Sprintf("%.1f", f.Load)
		}
		if best {
			fmt.Fprintf(&b, " %s |", ratio(row.BestRatio()))
		}
		fmt.Fprintf(&b, " %.1f; %s |\n", row.Iggo.Load, strings.Join(loads, ", "))
	}
	if r.Disk != nil && r.Disk.MBps > 0 {
		for _, row := range r.Rows {
			if row.Setup == SetupSingle && row.Durability == "persisted" && row.Iggo.Err == "" {
				mbps := row.Iggo.MsgsPerSec * float64(r.MessageSize) / 1e6
				fmt.Fprintf(&b, "\nSingle node, persisted, %d producer(s): %.1f MB/s of payload, %.0f%% of the disk's %.1f MB/s",
					row.Producers, mbps, 100*mbps/r.Disk.MBps, r.Disk.MBps)
				if r.Disk.ReleasedMBps > 0 {
					fmt.Fprintf(&b, " (%.0f%% of its %.1f MB/s with pages released)", 100*mbps/r.Disk.ReleasedMBps, r.Disk.ReleasedMBps)
				}
				b.WriteString(".\n")
			}
		}
	}
	var shares []string
	for _, c := range r.Rows {
		if c.Setup != SetupCluster || c.Iggo.Err != "" {
			continue
		}
		for _, one := range r.Rows {
			if one.Setup == SetupSingle && one.Durability == c.Durability && one.Producers == c.Producers && one.Iggo.Err == "" && one.Iggo.MsgsPerSec > 0 {
				shares = append(shares, fmt.Sprintf("%s %dp %.0f%%", c.Durability, c.Producers, 100*c.Iggo.MsgsPerSec/one.Iggo.MsgsPerSec))
			}
		}
	}
	if len(shares) > 0 {
		fmt.Fprintf(&b, "\niggo 3-node throughput as a share of the single node's: %s.\n", strings.Join(shares, ", "))
	}
	var failed []string
	for _, row := range r.Rows {
		if row.Iggo.Err != "" {
			failed = append(failed, fmt.Sprintf("- %s, %s, %d producer(s), iggo: %s", setupTitle(row.Setup), row.Durability, row.Producers, row.Iggo.Err))
		}
		for i, f := range row.JetStream {
			if f.Err != "" {
				failed = append(failed, fmt.Sprintf("- %s, %s, %d producer(s), %s: %s", setupTitle(row.Setup), row.Durability, row.Producers, r.Modes[i].Label(), f.Err))
			}
		}
	}
	if len(failed) > 0 {
		b.WriteString("\nFailed:\n" + strings.Join(failed, "\n") + "\n")
	}
	return b.String()
}
