package config

import (
	"fmt"
	"reflect"
	"strings"
)

// Refusal is a setting this build cannot serve. Any value other than the
// default refuses the load with a problem naming the key and the reason,
// so nothing is accepted and then ignored. TestEveryKeyHonouredOrRefused
// proves every entry refuses, and fails for any key of the schema that the
// server neither reads nor lists here.
type Refusal struct {
	// Key is the dotted TOML path (no array elements).
	Key string
	// Reason says why and what to do; it follows the key in the message.
	Reason string
	// Probe is a non-default value, written as its IGGY_* variable would
	// give it; the key walk test loads it to prove the refusal.
	Probe string
}

// Refused lists the keys whose non-default values refuse to start.
var Refused = []Refusal{
	// Transports not served by this build. Each line goes when its
	// transport is implemented (the keys under it are then read, which the
	// key walk test checks): a security setting never falls back, so TLS
	// asked for and not served refuses instead of serving plaintext.
	{Key: "quic.send_window", Reason: "quic-go, which serves QUIC in this build, has no send-window setting (data in flight is bounded by the client's receive window and congestion control); only the default is accepted", Probe: "1 MiB"},
	{Key: "telemetry.enabled", Reason: "OpenTelemetry export is not available in this build; set it to false", Probe: "true"},
	// A WebSocket setting its library (coder/websocket) has no knob for.
	{Key: "websocket.accept_unmasked_frames", Reason: "this build's WebSocket library always refuses unmasked client frames (RFC 6455); only false is accepted", Probe: "true"},
	{Key: "tcp.enabled", Reason: "this build always serves TCP (its tooling and health checks use it); it cannot be turned off", Probe: "false"},

	// Iggy settings for mechanisms this build does not have.
	{Key: "cluster.repair_gap_debounce_interval", Reason: "this build's journal repair has no debounce (cluster.repair_retry_interval paces it); only the default is accepted", Probe: "2s"},
	{Key: "cluster.superblock_wedged_fatal_timeout", Reason: "in this build a group whose superblock or journal write fails stops at once and is recovered from disk by a restart; there is no wedge timer, only the default is accepted", Probe: "0"},
	{Key: "cluster.coordinator.skip_shard_zero_for_replicas", Reason: "replica links are served by the replica plane's own goroutines, not by shards; only the default is accepted", Probe: "false"},
	{Key: "sharding.reply_inbox_capacity", Reason: "a shard has one inbox in this build (sharding.inbox_capacity) and answers a request to its waiting connection on the request itself, with no reply lane; only the default is accepted", Probe: "7"},
	{Key: "sharding.poll_completion_capacity", Reason: "polls are served on the owning shard's loop in this build, with no completion queue; only the default is accepted", Probe: "7"},
	{Key: "sharding.partition_io_capacity", Reason: "partition file work runs on the owning shard's loop in this build, with no job queue; only the default is accepted", Probe: "7"},
	{Key: "sharding.partition_io_bytes_max", Reason: "partition file work runs on the owning shard's loop in this build, with no job queue; leave it unset", Probe: "512 MiB"},
	{Key: "sharding.reconcile_periodic_interval", Reason: "this build reconciles partitions after every metadata commit and state transfer, with no periodic pass; only the default is accepted", Probe: "2s"},
	{Key: "partition.wal_group_commit_delay_micros", Reason: "this build does not delay the group fdatasync (each shard loop iteration already shares one fdatasync among the prepares it took, up to sharding.batch_max); leave it 0", Probe: "100"},
	{Key: "partition.offset_reservation_lease", Reason: "this build reserves no offsets ahead (a restarted partition resumes from its recovered segments and the superblock's offset frontier); only the default is accepted", Probe: "100"},
	{Key: "partition.evicted_ring_capacity", Reason: "this build repairs peers from the partition journal (partition.wal_bytes_max), with no separate ring; only the default is accepted", Probe: "100"},
	{Key: "partition.evicted_ring_bytes_max", Reason: "this build repairs peers from the partition journal (partition.wal_bytes_max), with no separate ring; only the default is accepted", Probe: "1 MiB"},
	{Key: "partition.transfer_served_cache_bytes_max", Reason: "this build keeps no cache of served transfer segments (they are read from disk); only the default is accepted", Probe: "1 GiB"},
	{Key: "partition.transfer_artifact_bytes_max", Reason: "a cap on received state-transfer artifacts is not enforced by this build; only the default is accepted", Probe: "2 GiB"},
	{Key: "message_bus.client_queue_capacity", Reason: "a client connection has one request in flight in this build (it is served in lockstep), so there is no per-connection frame queue; only the default is accepted", Probe: "7"},
	{Key: "message_bus.close_grace", Reason: "this build does not wait for client connections to finish at shutdown; only the default is accepted", Probe: "5s"},
}

// Gate says that every key under Prefix acts only when the Gate key is on.
// While the gate is refused, those keys are inert whatever their value.
type Gate struct {
	Prefix string // dotted path, "[]" for array elements
	Gate   string
}

// Gated lists the keys that only a refused setting would bring into effect.
var Gated = []Gate{
	{Prefix: "telemetry", Gate: "telemetry.enabled"},
}

func (cfg *Config) validateRefused(c *checker) {
	def := reflect.ValueOf(Default()).Elem()
	cur := reflect.ValueOf(cfg).Elem()
	for _, r := range Refused {
		v, ok := fieldAt(cur, r.Key)
		d, dok := fieldAt(def, r.Key)
		if !ok || !dok {
			panic(fmt.Sprintf("config: Refused names %q, which the schema does not have", r.Key))
		}
		if reflect.DeepEqual(v.Interface(), d.Interface()) {
			continue
		}
		c.fail(r.Key, "%s (got %s, only %s is accepted)", r.Reason, showValue(v), showValue(d))
	}
}

// fieldAt resolves a dotted key without array elements to its field.
func fieldAt(v reflect.Value, key string) (reflect.Value, bool) {
	for _, part := range strings.Split(key, ".") {
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, false
		}
		f, ok := fieldByKey(v.Type(), part)
		if !ok {
			return reflect.Value{}, false
		}
		v = v.FieldByIndex(f.Index)
	}
	return v, true
}

func showValue(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "unset"
		}
		v = v.Elem()
	}
	if s, ok := v.Interface().(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprint(v.Interface())
}
