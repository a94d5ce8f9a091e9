package replica

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/replica/longpoll"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/wire"
)

// Process and host figures come from /proc and uname: introspection, not
// storage, so they use package os directly.

type cpuSample struct {
	at        time.Time
	procTicks uint64 // utime+stime of this process, in clock ticks
	sysBusy   uint64 // host ticks not idle or iowait, since boot
	sysTotal  uint64 // all host ticks since boot
}

// cpuMinWindow is the shortest interval CPU usage is averaged over. /proc
// counts in 10 ms ticks, so a window of a few milliseconds (two GET_STATS
// in a row) would report 0 % or a multiple of 100 %.
const cpuMinWindow = time.Second

// ticksPerSecond is USER_HZ, the unit of /proc/self/stat and /proc/stat:
// 100 on every Linux architecture the server builds for.
const ticksPerSecond = 100

// cpuMeter turns the cumulative tick counters of /proc into percentages.
// It keeps the last sample handed out and the one before it (base). A call
// at least cpuMinWindow after the last sample reports the usage since that
// sample and makes it the base; an earlier call reports the usage since the
// base, which is then at least cpuMinWindow old. Until a first sample
// exists the base is the process start with zero counters, so the first
// GET_STATS reports the process's average since it started (the host's
// since boot) instead of 0.
type cpuMeter struct {
	mu         sync.Mutex
	read       func() cpuSample
	base, last cpuSample
}

func newCPUMeter(start time.Time, read func() cpuSample) *cpuMeter {
	s := cpuSample{at: start}
	return &cpuMeter{read: read, base: s, last: s}
}

// usage returns the process's CPU use in percent of one CPU (a process
// busy on two cores reports 200) and the host's in percent of all CPUs.
func (m *cpuMeter) usage() (proc, host float32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.read()
	ref := m.base
	if now.at.Sub(m.last.at) >= cpuMinWindow {
		ref = m.last
		m.base, m.last = m.last, now
	}
	if el := now.at.Sub(ref.at).Seconds(); el > 0 && now.procTicks >= ref.procTicks {
		proc = float32(float64(now.procTicks-ref.procTicks) / ticksPerSecond / el * 100)
	}
	if now.sysTotal > ref.sysTotal && now.sysBusy >= ref.sysBusy {
		host = float32(float64(now.sysBusy-ref.sysBusy) / float64(now.sysTotal-ref.sysTotal) * 100)
	}
	return proc, host
}

func readCPUSample() cpuSample {
	s := cpuSample{at: time.Now(), procTicks: readProcTicks()}
	s.sysBusy, s.sysTotal = readSysTicks()
	return s
}

// processCPU measures this process; package initialisation is as close to
// the process start as Go code gets.
var processCPU = newCPUMeter(time.Now(), readCPUSample)

func readProcTicks() uint64 {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	// The command name (field 2) may hold spaces; fields are counted
	// after its closing parenthesis: utime and stime are fields 14 and 15.
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseUint(f[11], 10, 64)
	k, _ := strconv.ParseUint(f[12], 10, 64)
	return u + k
}

func readSysTicks() (busy, total uint64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "cpu" {
		return 0, 0
	}
	for i, v := range f[1:] {
		x, _ := strconv.ParseUint(v, 10, 64)
		// guest and guest_nice (fields 9, 10) are already counted in
		// user and nice.
		if i >= 8 {
			break
		}
		total += x
		if i != 3 && i != 4 { // idle, iowait
			busy += x
		}
	}
	return busy, total
}

func procKV(path string) map[string]uint64 {
	out := map[string]uint64{}
	b, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		x, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && f[1] == "kB" {
			x *= 1024
		}
		out[strings.TrimSpace(k)] = x
	}
	return out
}

func osRelease() string {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return "unknown_os_version"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return "unknown_os_version"
}

func kernelVersion() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "unknown_kernel_version"
	}
	return unix.ByteSliceToString(u.Release[:])
}

// stats answers GET_STATS.
func (n *Node) stats(view *metadata.State) wire.Stats {
	proc, host := processCPU.usage()
	mem := procKV("/proc/meminfo")
	status := procKV("/proc/self/status")
	pio := procKV("/proc/self/io")
	hostname, _ := os.Hostname()
	counts := view.Counts()
	s := wire.Stats{
		ProcessID:       uint32(os.Getpid()),
		CPUUsage:        proc,
		TotalCPUUsage:   host,
		MemoryUsage:     status["VmRSS"],
		TotalMemory:     mem["MemTotal"],
		AvailableMemory: mem["MemAvailable"],
		RunTime:         uint64(time.Since(n.started).Microseconds()),
		StartTime:       uint64(n.started.UnixMicro()),
		ReadBytes:       pio["read_bytes"],
		WrittenBytes:    pio["write_bytes"],
		StreamsCount:    uint32(counts.Streams),
		TopicsCount:     uint32(counts.Topics),
		PartitionsCount: uint32(counts.Partitions),
		ClientsCount:    uint32(n.clients.count()),
		Hostname:        hostname,
		OSName:          strings.ToUpper(runtime.GOOS[:1]) + runtime.GOOS[1:],
		OSVersion:       osRelease(),
		KernelVersion:   kernelVersion(),
		Version:         ServerVersion,
		ThreadsCount:    uint32(status["Threads"]),

		ConsumerGroupsCount: uint32(counts.ConsumerGroups),
	}
	n.partStats.Range(func(_, v any) bool {
		ps := v.(*partStats)
		s.MessagesSizeBytes += ps.Size.Load()
		s.MessagesOriginalSizeBytes += ps.Original.Load()
		s.MessagesCount += ps.Messages.Load()
		s.Segments += ps.Segments.Load()
		return true
	})
	var fs unix.Statfs_t
	if err := unix.Statfs(n.cfg.Path, &fs); err == nil {
		s.FreeDiskSpace = fs.Bavail * uint64(fs.Bsize)
		s.TotalDiskSpace = fs.Blocks * uint64(fs.Bsize)
	}
	return s
}

// logSysinfo is logging.sysinfo_print_interval's line: what GET_STATS
// reports about the process, the host and the data, as Iggy's system info
// printer logs it (process and host CPU, memory, disk, clients, messages,
// I/O, threads, open descriptors).
func (n *Node) logSysinfo() {
	s := n.stats(n.store.View())
	fds := -1
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		fds = len(ents)
	}
	size := func(key string, b uint64) zap.Field { return zap.Stringer(key, config.ByteSize(b)) }
	n.log.Info("system info",
		zap.String("cpu", fmt.Sprintf("%.2f%%/%.2f%% (process/host)", s.CPUUsage, s.TotalCPUUsage)),
		size("memory_process", s.MemoryUsage),
		size("memory_used", s.TotalMemory-min(s.AvailableMemory, s.TotalMemory)),
		size("memory_total", s.TotalMemory),
		size("disk_free", s.FreeDiskSpace),
		size("disk_total", s.TotalDiskSpace),
		zap.Uint32("clients", s.ClientsCount),
		zap.Uint64("messages", s.MessagesCount),
		size("messages_size", s.MessagesSizeBytes),
		size("messages_size_original", s.MessagesOriginalSizeBytes),
		size("read", s.ReadBytes),
		size("written", s.WrittenBytes),
		zap.Uint32("threads", s.ThreadsCount),
		zap.Int("open_fds", fds),
		longPollField(n.waits.Stats()))
}

// snapshotZip builds the GET_SNAPSHOT_FILE archive. Stored and Deflated are
// honoured; the other compressions (bzip2, zstd, lzma, xz) have no encoder
// in Go's standard library and fall back to Deflated.
func (n *Node) snapshotZip(compression uint8, types []uint8) ([]byte, error) {
	method := zip.Deflate
	if compression == wire.SnapshotStored {
		method = zip.Store
	}
	want := map[uint8]bool{}
	for _, t := range types {
		if t == wire.SnapshotAll {
			for _, x := range []uint8{wire.SnapshotFilesystemOverview, wire.SnapshotProcessList, wire.SnapshotResourceUsage,
				wire.SnapshotTest, wire.SnapshotServerLogs, wire.SnapshotServerConfig} {
				want[x] = true
			}
			continue
		}
		want[t] = true
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, flate.BestSpeed)
	})
	add := func(name string, data []byte) error {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method, Modified: time.Now()})
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	keys := make([]int, 0, len(want))
	for k := range want {
		keys = append(keys, int(k))
	}
	sort.Ints(keys)
	for _, k := range keys {
		var err error
		switch uint8(k) {
		case wire.SnapshotFilesystemOverview:
			entries, _ := n.dataDirEntries()
			err = add("filesystem_overview.txt", []byte(strings.Join(entries, "\n")+"\n"))
		case wire.SnapshotProcessList:
			err = add("process_list.txt", processList())
		case wire.SnapshotResourceUsage:
			var b bytes.Buffer
			for _, f := range []string{"/proc/self/status", "/proc/meminfo", "/proc/loadavg"} {
				data, _ := os.ReadFile(f)
				fmt.Fprintf(&b, "== %s\n%s\n", f, data)
			}
			err = add("resource_usage.txt", b.Bytes())
		case wire.SnapshotTest:
			err = add("test.txt", []byte("test\n"))
		case wire.SnapshotServerLogs:
			dir := n.cfg.LogDir()
			files, _ := os.ReadDir(dir)
			for _, f := range files {
				if f.IsDir() {
					continue
				}
				data, rerr := os.ReadFile(filepath.Join(dir, f.Name()))
				if rerr != nil {
					continue
				}
				if limit := int(n.maxFrame) / 2; len(data) > limit {
					data = data[len(data)-limit:]
				}
				if err = add("logs/"+f.Name(), data); err != nil {
					break
				}
			}
		case wire.SnapshotServerConfig:
			data, rerr := os.ReadFile(filepath.Join(n.cfg.RuntimeDir(), config.RuntimeFileName))
			if rerr != nil {
				data = []byte("# runtime configuration unavailable: " + rerr.Error() + "\n")
			}
			err = add("server_config.toml", data)
		default:
			err = add(fmt.Sprintf("unknown_type_%d.txt", k), []byte("unknown snapshot type\n"))
		}
		if err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func processList() []byte {
	var b bytes.Buffer
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		fmt.Fprintf(&b, "%d %s\n", pid, strings.TrimSpace(string(comm)))
	}
	return b.Bytes()
}

// longPollField summarises long polling for the sysinfo line: polls
// waiting now, wake-ups and expiries so far, refused waits, and the
// publish-to-written-reply latency of woken polls.
func longPollField(s longpoll.Stats) zap.Field {
	return zap.Dict("long_poll", zap.Int64("waiting", s.Waiting), zap.Uint64("woken", s.Woken),
		zap.Uint64("expired", s.Expired), zap.Uint64("refused", s.Refused),
		zap.Duration("delivery_p50", s.P50), zap.Duration("delivery_p99", s.P99), zap.Duration("delivery_max", s.Max))
}
