// Package httpapi is Iggy 0.9's REST API as iggo serves it on shard 0:
// JSON routes over the binary command path, self-issued JWTs, Prometheus
// /metrics, /ping and the health endpoints /livez and /readyz. It
// implements no command: every route builds the binary command's body
// (package wire), runs it on the caller's Session — an in-process client
// session of the node's connection-serving path (replica.LocalSession:
// decode, admission, permissions, forwarding to the owning shard and, on a
// backup, to the primary, durability, one reply) — and renders the binary
// reply as Iggy's JSON. The node is reached only through Backend.
//
// # Routes
//
//	GET    /ping                                        "pong" (no token)
//	GET    /livez, /readyz                              health (no token; iggo)
//	POST   /users/login                                 {username, password} → identity
//	POST   /users/refresh-token                         {token} → identity (no bearer)
//	POST   /personal-access-tokens/login                {token} → identity
//	DELETE /users/logout                                revokes the bearer JWT, 204
//	GET    /users, POST /users                          list, create
//	GET|PUT|DELETE /users/{id}                          {id} may be "me" on GET
//	PUT    /users/{id}/password, /users/{id}/permissions
//	GET|POST /personal-access-tokens, DELETE /personal-access-tokens/{name}
//	GET|POST /streams, GET|PUT|DELETE /streams/{s}, DELETE /streams/{s}/purge
//	GET|POST /streams/{s}/topics, GET|PUT|DELETE /streams/{s}/topics/{t}
//	DELETE /streams/{s}/topics/{t}/purge
//	POST   /streams/{s}/topics/{t}/partitions           {partitions_count}
//	DELETE /streams/{s}/topics/{t}/partitions?partitions_count=n
//	DELETE /streams/{s}/topics/{t}/partitions/{p}?segments_count=n
//	GET|POST /streams/{s}/topics/{t}/consumer-groups, GET|DELETE …/consumer-groups/{g}
//	GET|PUT /streams/{s}/topics/{t}/consumer-offsets    ?consumer_id&partition_id / JSON
//	DELETE /streams/{s}/topics/{t}/consumer-offsets/{consumer}?partition_id=p
//	GET    /streams/{s}/topics/{t}/messages             poll: consumer_id, partition_id,
//	                                                    kind (offset|timestamp|first|last|next),
//	                                                    value, count (10), auto_commit,
//	                                                    wait (iggo: ms or a duration; the
//	                                                    poll's wait extension, long polling)
//	POST   /streams/{s}/topics/{t}/messages[?ack=none]  send (JSON messages, base64)
//	GET    /stats, /options/{topic|stream|user}, /cluster/metadata, /clients, /clients/{id}
//	POST   /snapshot                                    {compression, snapshot_types} → zip
//	GET    /metrics (http.metrics.endpoint)             Prometheus exposition
//	GET    /ui, /ui/...                                 the web console (http.web_ui; package
//	                                                    webui, mounted in front of the routes
//	                                                    above, behind CORS)
//
// Path identifiers are numeric when they parse as a u32, names otherwise
// (Iggy's Identifier::from_str_value). Statuses are Iggy's: reads 200 (a
// missing resource 404 with the not-found body), creates 200 with the
// created record (create partitions 200 without a body), updates and
// deletes 204, a send 201 with {"confirmations": [...]} and the
// Iggy-Durability header ("replicated-memory" for a replicated topic,
// "persisted" for a persisted one), ?ack=none 202 with Iggy-Durability:
// none (answered after validation and a permission pre-check, the send
// running in the background; at most 128 in flight, then 503 server_busy).
// Successful answers other than /ping carry Iggy-View, the metadata view.
// ?consistency=linearizable is served only by the metadata primary (503
// not_primary elsewhere); the default (serializable) reads locally.
//
// # Errors
//
// Every refusal is Iggy's error JSON {"id", "code", "reason", "field"}:
// the Iggy code and its snake_case name for errors of the command path
// (404 for the not-found codes, 401 for the authentication codes, 403 for
// 41 Unauthorized, 503 + Retry-After for 57/58, else 400), and the HTTP
// status as id for the HTTP layer's own: malformed JSON 400, JSON of the
// wrong shape 422, a body without Content-Type application/json 415, a body
// over http.max_request_size 413 (unread, Connection: close), an unknown
// route 404, a wrong method 405, a bad query string 400. Bad input costs at
// most one log line (failed logins at info, refused credentials at debug).
//
// # Authentication and sessions
//
// Protected routes need Authorization: Bearer <token>, a JWT this API
// issued or a raw personal access token. JWTs are HS256/384/512 with
// http.jwt's secrets (both empty: derived from cluster.auth.shared_secret
// with BLAKE3 derive_key as Iggy does, so every node accepts every node's
// tokens; without cluster auth a random key per start), claims jti, sub
// (user id), iss, aud, iat, nbf (iat + not_before), exp (iat +
// access_token_expiry); verification checks the algorithm, signature,
// exp/nbf/iat with clock_skew of leeway, valid_issuers and
// valid_audiences, that the user exists and is active, and the revocation
// list. Logout revokes the token through the metadata group
// (metadata.RevokeAccessToken), so every node refuses it until its expiry
// and restarts keep the revocation; refresh issues a new token and, as in
// Iggy, leaves the old one valid until its own expiry.
//
// Each live credential (jwt:{jti}, pat:{sha256}) has one Session, at most
// MaxSessions (half of metadata.clients_table_max); expired ones are
// dropped when the table is full, and a full table of live ones answers
// 503. A session registers a VSR client session only at its first write
// (reads need none), like Iggy's HTTP sessions.
//
// # Metrics and health
//
// The metrics endpoint needs a bearer token, as in Iggy; with
// http.metrics.open_address it is also served without one on that address.
// /livez answers 200 while the node runs; /readyz 200 once the metadata
// group is in normal status (and, in a cluster, bootstrapped) and every
// partition the metadata names is open on this node with its replica in
// normal status, else 503 with the reason.
package httpapi
