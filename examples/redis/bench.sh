#!/usr/bin/env bash
# bench.sh compares this server with a real redis-server under
# redis-benchmark, without and with pipelining, and prints a markdown table
# of requests per second and their ratio.
#
# Each server runs on CPU 0 (the Go one with GOMAXPROCS=1 and one event
# loop), redis-benchmark on CPU 1. The servers take turns, in alternating
# order, for ROUNDS rounds; the table gives each server's median, and the
# median and range of the ratios of adjacent runs.
#
#	examples/redis/bench.sh
#	ROUNDS=6 REQUESTS=500000 examples/redis/bench.sh
#
# It needs redis-server, redis-cli and redis-benchmark (Debian packages
# redis-server and redis-tools), taskset, and two CPUs.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-200000}
CLIENTS=${CLIENTS:-50}
TESTS=${TESTS:-set,get,incr,lpush,lpop,sadd,hset}
PIPELINES=${PIPELINES:-"1 16"}
SLUICE_PORT=${SLUICE_PORT:-6390}
REDIS_PORT=${REDIS_PORT:-6391}
SERVER_CPU=${SERVER_CPU:-0}
BENCH_CPU=${BENCH_CPU:-1}

for tool in redis-server redis-cli redis-benchmark taskset go; do
	command -v "$tool" >/dev/null || { echo "bench.sh: $tool is not installed" >&2; exit 1; }
done

tmp=$(mktemp -d)
pids=()
cleanup() {
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

# waitFor waits up to 10 s for a server to answer PING on port $1.
waitFor() {
	for _ in $(seq 100); do
		if [ "$(redis-cli -p "$1" PING 2>/dev/null)" = PONG ]; then
			return
		fi
		sleep 0.1
	done
	echo "bench.sh: nothing answers on port $1" >&2
	exit 1
}

(cd "$(dirname "$0")" && go build -o "$tmp/sluice-redis" .)
GOMAXPROCS=1 taskset -c "$SERVER_CPU" "$tmp/sluice-redis" -addr "tcp://127.0.0.1:$SLUICE_PORT" -loops 1 >"$tmp/sluice.log" 2>&1 &
pids+=($!)
taskset -c "$SERVER_CPU" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
	--logfile "$tmp/redis.log" &
pids+=($!)
waitFor "$SLUICE_PORT"
waitFor "$REDIS_PORT"

# bench runs redis-benchmark against server $1 on port $2 with pipeline $3,
# and appends "server pipeline round test rps" lines to the results.
bench() {
	redis-cli -p "$2" FLUSHALL >/dev/null
	taskset -c "$BENCH_CPU" redis-benchmark -p "$2" -t "$TESTS" -n "$REQUESTS" -c "$CLIENTS" -P "$3" --csv |
		awk -F, -v server="$1" -v p="$3" -v round="$round" \
			'NR > 1 { gsub(/"/, ""); print server, p, round, $1, $2 }' >>"$tmp/results"
}

for round in $(seq "$ROUNDS"); do
	for p in $PIPELINES; do
		if [ $((round % 2)) -eq 1 ]; then
			bench sluice "$SLUICE_PORT" "$p"
			bench redis "$REDIS_PORT" "$p"
		else
			bench redis "$REDIS_PORT" "$p"
			bench sluice "$SLUICE_PORT" "$p"
		fi
	done
	echo "bench.sh: round $round of $ROUNDS done" >&2
done

echo "redis-benchmark -t $TESTS -n $REQUESTS -c $CLIENTS; $ROUNDS rounds; $(redis-server --version | cut -d' ' -f1-3)"
echo
awk -v tests="$TESTS" -v pipelines="$PIPELINES" '
	function median(list,    v, n, i, j, t) {
		n = split(list, v, " ")
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && v[j-1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t }
		return n % 2 ? v[(n+1)/2] : (v[n/2] + v[n/2+1]) / 2
	}
	{ rps[$1, $2, $3, toupper($4)] = $5; rounds[$3] = 1 }
	END {
		print "| test | pipeline | sluice req/s | redis-server req/s | ratio (median) | ratio (range) |"
		print "|---|---:|---:|---:|---:|---|"
		nt = split(toupper(tests), test, ",")
		np = split(pipelines, pipe, " ")
		for (i = 1; i <= np; i++) {
			for (j = 1; j <= nt; j++) {
				s = r = q = ""; lo = 1e18; hi = 0
				for (k in rounds) {
					a = rps["sluice", pipe[i], k, test[j]]; b = rps["redis", pipe[i], k, test[j]]
					if (a == "" || b == "") continue
					s = s " " a; r = r " " b; ratio = a / b; q = q " " ratio
					if (ratio < lo) lo = ratio
					if (ratio > hi) hi = ratio
				}
				if (q == "") continue
				printf "| %s | %d | %.0f | %.0f | %.2fx | %.2f-%.2fx |\n", test[j], pipe[i], median(s), median(r), median(q), lo, hi
			}
		}
	}' "$tmp/results"
