#!/bin/sh
# iggo bench pp over every client transport in one run on this machine:
# one server serves tcp + ws + quic, then (same data directory, restarted)
# one serves tcp-tls + wss (generated self-signed certificates; the client
# skips verification; QUIC's is always self-signed and unverified, Iggy's
# client default). ROUNDS rounds interleave the five transports so
# that machine noise hits them alike; the summary gives each transport's
# median msgs/s, p50 and p99 and its ratio to plaintext TCP, and the CPU
# time server and client spent per 1,000 messages (utime + stime of the
# server process and of the bench client), which machine load disturbs far
# less than wall-clock rates.
#
# Usage: tests/bench/transports/run.sh BIN_DIR [OUT_DIR]
# Needs /usr/bin/time. Env: PRODUCERS (4), BATCHES per producer (50), ROUNDS (3), PORT (38090).
set -eu
BIN=${1:?usage: run.sh BIN_DIR [OUT_DIR]}
OUT=${2:-$(mktemp -d /tmp/iggo-bench-transports.XXXXXX)}
PRODUCERS=${PRODUCERS:-4}
BATCHES=${BATCHES:-50}
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-38090}
WSPORT=$((PORT + 2))
QUICPORT=$((PORT + 4))
DATA=$OUT/data
mkdir -p "$OUT"
rm -rf "$DATA"
PID=

stop() {
	if [ -n "$PID" ]; then
		kill "$PID" 2>/dev/null || true
		wait "$PID" 2>/dev/null || true
		PID=
	fi
}
trap stop EXIT INT TERM

serve() { # $1 = tls (true/false)
	stop
	env IGGY_PATH="$DATA" IGGY_TCP_ADDRESS=127.0.0.1:$PORT IGGY_HTTP_ENABLED=false \
		IGGY_WEBSOCKET_ENABLED=true IGGY_WEBSOCKET_ADDRESS=127.0.0.1:$WSPORT IGGY_SHARDING_PIN_CORES=false \
		IGGY_QUIC_ENABLED=true IGGY_QUIC_ADDRESS=127.0.0.1:$QUICPORT \
		IGGY_TCP_TLS_ENABLED=$1 IGGY_TCP_TLS_SELF_SIGNED=true IGGY_TCP_TLS_CERT_FILE= IGGY_TCP_TLS_KEY_FILE= \
		IGGY_WEBSOCKET_TLS_ENABLED=$1 IGGY_WEBSOCKET_TLS_SELF_SIGNED=true IGGY_WEBSOCKET_TLS_CERT_FILE= IGGY_WEBSOCKET_TLS_KEY_FILE= \
		"$BIN/iggo-server" --with-default-root-credentials >>"$OUT/server.log" 2>&1 &
	PID=$!
	i=0
	until "$BIN/iggo" --tcp-server-address 127.0.0.1:$PORT --tcp-tls-enabled=$1 --tls-insecure ping >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 300 ] || { echo "server did not start; see $OUT/server.log" >&2; exit 1; }
		sleep 0.1
	done
}

cpu_ticks() { # utime + stime of pid $1, in clock ticks
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

run() { # $1 = name, then the global flags
	name=$1
	shift
	s0=$(cpu_ticks "$PID")
	line=$(/usr/bin/time -f '%U %S' -o "$OUT/time.txt" "$BIN/iggo" "$@" -u iggy -p iggy bench pp -p "$PRODUCERS" -b "$BATCHES" -m 1000 -P 1000 --no-output --progress none | grep '^Producers total')
	s1=$(cpu_ticks "$PID")
	srv=$(( (s1 - s0) * 1000 / $(getconf CLK_TCK) ))
	cpu=$(awk -v s="$srv" '{ printf "%d", ($1 + $2) * 1000 + s }' "$OUT/time.txt")
	echo "$name $line cpu_ms $cpu srv_ms $srv" | tee -a "$OUT/results.txt"
}

: >"$OUT/results.txt"
r=1
while [ $r -le "$ROUNDS" ]; do
	serve false
	run tcp --tcp-server-address 127.0.0.1:$PORT
	run ws --transport ws --websocket-server-address 127.0.0.1:$WSPORT
	run quic --transport quic --quic-server-address 127.0.0.1:$QUICPORT
	serve true
	run tcp-tls --tcp-server-address 127.0.0.1:$PORT --tcp-tls-enabled --tls-insecure
	run wss --transport ws --websocket-server-address 127.0.0.1:$WSPORT --websocket-tls-enabled --tls-insecure
	r=$((r + 1))
done
stop

echo
echo "median of $ROUNDS rounds ($PRODUCERS producers x $BATCHES batches of 1000 x 1 KB; load $(cut -d' ' -f1-3 /proc/loadavg))"
awk '
{ t = $1; for (i = 1; i <= NF; i++) { if ($i == "msg/s,") m[t, ++n[t]] = $(i-1); if ($i == "p50") p50[t, n[t]] = $(i+1); if ($i == "p99") p99[t, n[t]] = $(i+1); if ($i == "cpu_ms") cpu[t, n[t]] = $(i+1) / msgs * 1000; if ($i == "srv_ms") srv[t, n[t]] = $(i+1) / msgs * 1000 } }
function median(arr, t, k,   v, i, j, x) { for (i = 1; i <= k; i++) v[i] = arr[t, i] + 0
	for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (v[j] < v[i]) { x = v[i]; v[i] = v[j]; v[j] = x }
	return v[int((k + 1) / 2)] }
END {
	base = median(m, "tcp", n["tcp"]); cbase = median(cpu, "tcp", n["tcp"])
	printf "%-9s %10s %8s %8s %7s %15s %14s %18s\n", "transport", "msgs/s", "p50 ms", "p99 ms", "vs tcp", "CPU ms/1000 msg", "tcp CPU / CPU", "of which server"
	split("tcp tcp-tls ws wss quic", ts, " ")
	for (i = 1; i <= 5; i++) { t = ts[i]; v = median(m, t, n[t]); c = median(cpu, t, n[t])
		printf "%-9s %10d %8.1f %8.1f %6.0f%% %15.2f %13.0f%% %18.2f\n", t, v, median(p50, t, n[t]), median(p99, t, n[t]), 100 * v / base, c, 100 * cbase / c, median(srv, t, n[t]) }
}' msgs=$((PRODUCERS * BATCHES * 1000)) "$OUT/results.txt" | tee "$OUT/summary.txt"
