// Package webui is the web console the HTTP API serves at /ui when
// http.web_ui is on: pages rendered from Go templates, plain JavaScript and
// CSS, all embedded in the binary (no Node toolchain, no CDN, no external
// request). The pages hold no data: the browser logs in with POST
// /users/login (or a personal access token), keeps the JWT in the tab's
// session storage (renewed with POST /users/refresh-token when a third of
// its lifetime is left) and calls the same JSON API as any client, so the API's
// permissions decide what each user sees, nothing is cached past a
// refresh, and refusals show the API's own error (Iggy's reason and code).
//
// # Routes (all under /ui; every other path goes to the API)
//
//	GET /ui                     301 to /ui/
//	GET /ui/, /ui/cluster       cluster: nodes, roles, health, addresses, per-node figures
//	GET /ui/login               log in
//	GET /ui/streams             streams; create, purge, delete
//	GET /ui/streams/{s}         a stream's topics; create, rename, purge, delete
//	GET /ui/streams/{s}/topics/{t}  partitions (paged), options, update, partitions and segments
//	GET /ui/messages            message browser (query: stream, topic, partition, kind, value, count, format) and send form
//	GET /ui/groups              consumer groups of a topic, members, committed offsets and lag
//	GET /ui/users               the user, its tokens, users and permissions
//	GET /ui/charts              live charts of this node's metrics
//	GET /ui/static/{file}       console.js (app.js, charts.js and pages.js joined), app.css
//	                            and the sources; cached for good at the build's ?v= digest
//	GET /ui/api/summary         metrics summary (bearer token; see Summary)
//	GET /ui/api/group-offsets   a consumer group's committed offsets (bearer token)
//
// Pages and assets need no token, as in Iggy (they are the same for
// everyone); the two /ui/api routes need one, checked by the API's own
// authentication. Every console answer carries a Content-Security-Policy
// that allows scripts and styles only from the console (no inline code)
// and connections to any node (the cluster page asks each node of
// GET /cluster/metadata for its own summary, at the address and HTTP port
// the metadata names, with the same token: tokens verify on every node
// when cluster.auth is on, and the API's CORS settings decide whether the
// browser may read the answer).
//
// # The metrics summary
//
// GET /ui/api/summary reads the node's own Prometheus registry (the one
// http.metrics.endpoint serves; 404 when http.metrics.enabled is off) and
// answers a Summary as JSON:
//
//	{"version": "0.9.0-iggo", "time_ms": 1700000000000, "ready": true, "live": true,
//	 "messages_in": 0, "bytes_in": 0, "messages_out": 0, "bytes_out": 0,
//	 "connections": {"tcp": 1, "http": 1, ...}, "http_requests": 12,
//	 "latency": {"count": 5, "sum": 0.01, "bounds": [5e-05, ...], "counts": [1, ...]},
//	 "gossip": [{"name": "node-1", "state": "alive", "up": true}],
//	 "primaries": {"metadata": 1, "partition": 2},
//	 "process": {"cpu_seconds": 1.2, "resident_bytes": 1, "start_time": 1.7e9},
//	 "entities": {"streams": 1, "topics": 1, ...}}
//
// Counters are totals since the node started (messages_in and bytes_in:
// iggo_messages_appended_total and iggo_bytes_appended_total summed over
// topics; messages_out and bytes_out: iggo_messages_polled_total and
// iggo_bytes_polled_total), latency is iggo_request_duration_seconds summed
// over commands and transports as a cumulative histogram. The browser
// turns two samples into per-second rates and bucket deltas into
// percentiles (Prometheus's histogram_quantile interpolation), so the route
// keeps no state and is not a second metrics system.
//
// # Consumer-group offsets
//
// GET /ui/api/group-offsets?stream=S&topic=T&group=G[&from=P][&count=N]
// answers {"partitions": [{"partition_id", "current_offset",
// "stored_offset"}]} for partitions P .. P+N-1 (N ≤ 100), running the binary
// GET_CONSUMER_OFFSET with a consumer-group consumer on the caller's session
// (permission: poll on the topic); offsets are null on a partition where
// the group has committed nothing. Iggy's REST API reads only single
// consumers' offsets, and the lag view needs the group's.
package webui
