// Package config is the server configuration: its schema (Config), the
// embedded reference file (default.toml, the documented defaults), loading
// with environment overrides, validation, and the runtime config file.
//
// # Shape
//
// The file has Iggy 0.9.0's shape, so an Iggy configuration loads unchanged:
// `path` and the tables [runtime], [logging], [sharding], [partition],
// [metadata], [message_bus], [cluster] ... sit at the top level (the old
// [system] table is gone).
//
// Every key either acts or refuses to start: nothing is accepted and
// ignored. Keys of features this build does not serve
// ([telemetry]) are parsed and
// validated like the rest, and turning one on refuses to start with a
// message saying it is not available (a TLS setting never falls back to
// plaintext). [http] is served, enabled by default as in Iggy. Iggy keys
// for mechanisms iggo does not have (Refused, refuse.go: consumer-group
// session reports, the evicted ring, the group-commit delay ...) accept
// only their default value. TestEveryKeyHonouredOrRefused proves it: it
// walks every key of the schema and fails for one whose field no non-test
// code outside this package reads (found by type-checking the module) and
// that is not refused. iggo adds keys of its own: sharding.batch_max,
// runtime.gc_percent (the Go collector's GOGC target),
// cluster.nodes[].ports.gossip (the memberlist port; unset, tcp_replica +
// GossipPortOffset), http.metrics.open_address (the metrics endpoint
// without authentication on a separate listener), the [long_poll] table
// (max_wait, waiters_max, waiters_per_connection: polls that wait for
// messages), the client-intake limits under [message_bus]
// (descriptors_reserved, unauthenticated_*, inflight_bytes_max,
// frame_*_timeout), logging.client_events_per_second and the [login] table
// (password verifications at once, the failed-login throttle).
//
// # Loading
//
// LoadFrom layers, each over the previous:
//
//  1. default.toml, embedded in the binary;
//  2. the file from --config, else $IGGY_CONFIG_PATH (either must exist;
//     with neither, no file is read). Tables merge key by key; an array in
//     the file (for example [[cluster.nodes]]) replaces the default array;
//  3. environment variables: IGGY_ + the key's TOML path upper-cased with
//     '.' → '_', array elements by index. IGGY_TCP_ADDRESS sets tcp.address,
//     IGGY_PATH sets path, IGGY_CLUSTER_NODES_2_PORTS_TCP_REPLICA sets
//     cluster.nodes[2].ports.tcp_replica and grows the roster to three
//     entries if needed. Booleans are true/false; lists are "a, b" or Iggy's
//     "[a, b]"; durations and sizes use the human forms below; an empty value
//     sets an empty string or list, or unsets an optional key.
//
// IGGY_ROOT_USERNAME, IGGY_ROOT_PASSWORD and IGGY_CONFIG_PATH are outside the
// schema. Other IGGY_* variables that start like a config table but match no
// key (a typo such as IGGY_TCP_ADRESS) come back as warnings; unknown keys in
// the file likewise. Keys Iggy removed or moved — anything under [system],
// partition.enforce_fsync, system.segment.size, ... and the IGGY_SYSTEM_*
// variables — refuse the load with a message naming the replacement, since
// ignoring them would silently change behaviour (a data path falling back to
// the default, durability quietly weaker than asked).
//
// # Values
//
// Durations are strings: "500 ms", "30s", "1 m", "7 days", "1h 30m" (units
// ns, us, ms, s, m, h, d/days, w/weeks; "0" alone is zero). Sizes are strings
// or integers: "1200 B", "500 MB" (10^6), "64 MiB" (2^20), "1.5 GiB",
// "unlimited"/"none" = 0. Both marshal back in that style. Cluster timeouts
// are converted to 10 ms consensus ticks by Ticks (rounded down, at least
// one).
//
// # Validation
//
// Validate checks every rule and returns a *ValidationError listing each
// broken one as "key: rule", for example
//
//	cluster.heartbeat_timeout: must be at least 4 x cluster.commit_broadcast_interval (500 ms), got 1 s
//
// The rules are Iggy 0.9.0's (queue depths, journal slots, roster shape,
// secret lengths, shutdown timing ...), so a file valid for one is valid for
// the other. cpu_allocation is checked against the machine at boot by
// ShardCPUs.
//
// # Runtime file
//
// After the listeners bind, WriteRuntime deletes and recreates
// <path>/<runtime.path> and writes current_config.toml: the effective
// configuration with the bound addresses (and, clustered, this node's roster
// ports) substituted and every secret (cluster.auth.*secret, http.jwt.*
// secrets, encryption.key) left out. This is boot-time configuration I/O, not
// storage, and uses package os directly.
package config
