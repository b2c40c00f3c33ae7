#!/usr/bin/env bash
# bench.sh compares this server with a real redis-server by the CPU time each
# spends per request, under the same redis-benchmark load, without and with
# pipelining, and prints a markdown table.
#
# Why CPU per request and not requests per second: redis-benchmark is one
# thread. With one core to itself it can be the limit (on a 2-vCPU VM it used
# 93% to 99% of its core, with and without pipelining); then both servers
# read alike in requests per second and the ratio of their rates is the
# client's noise, not a property of the servers. The CPU a server spends per
# request over a fixed request count does not depend on who the limit was.
# Requests per second are printed beside it, with the client's share of its
# core: a rate separates the servers only where the client stayed below its
# core (and the server was near its own).
#
# How: each server runs on SERVER_CPU (the Go one with GOMAXPROCS=1 and one
# event loop), redis-benchmark on BENCH_CPU. For every pipeline depth the
# servers take turns, sluice then redis-server in odd rounds and the other
# way round in even ones, for ROUNDS rounds; each turn runs every
# test in TESTS as its own redis-benchmark of REQUESTS requests over CLIENTS
# connections, after FLUSHALL. Around each run the script reads:
#
#   - the server's CPU time: the sum of the first field of
#     /proc/PID/task/*/schedstat (nanoseconds the scheduler ran each thread;
#     utime/stime are tick-sampled and miss a server that runs in short
#     bursts), divided by the requests;
#   - how often the server's threads were put on a CPU, the sum of the
#     third field there, per 1,000 requests: nearly each time is a
#     wake-up from a wait for the client, and on a virtual machine a
#     wake-up costs the woken thread microseconds of CPU
#     (benchmarks/cfloor/wakeup.c prices one), so a server that answers
#     faster than its client asks, and so waits more often, pays for it
#     here;
#   - the client's CPU time: redis-benchmark's rusage as its parent sees it
#     (Linux makes user plus system add up to the scheduler's run time),
#     divided by the wall time of the run (which includes its start and
#     its connecting): near 100% means the client was the limit;
#   - requests per second, as redis-benchmark reports them;
#   - how long some task waited for a CPU meanwhile (the "some" total in
#     /proc/pressure/cpu): with the server and the client alone on their
#     cores, near nothing. Another job on the machine takes the client's or
#     the server's core, shrinks the server's batches and evicts its caches,
#     so a round in which any run saw tasks waiting for a CPU more than
#     MAX_WAIT percent of the time is run again (up to RETRIES times in all)
#     and left out of the table, which says how many of the pairs it ran it
#     kept. Where the kernel keeps no pressure information nothing is left
#     out.
#
# The table gives each server's median CPU per request, the median and range
# of the ratios (sluice / redis-server) of the two runs in each round, the
# median requests per second, and the median CPU share of the client and of
# each server. A warm-up run of each test precedes the rounds and is not
# counted.
#
# The test "fanout" is pub/sub fan-out (the fanout command beside this
# script): SUBSCRIBERS connections subscribe to one channel and one more
# publishes to it, -P PUBLISH commands at a time, until REQUESTS messages
# have been delivered in all; the figures are then per delivered message.
# LOOPS sets the Go server's event loops, all on SERVER_CPU, and PROCS its
# GOMAXPROCS (LOOPS unless set: PROCS=2 with one loop gives the runtime a
# spare P, as "How the loop meets the Go runtime" in ARCHITECTURE.md says): with more than one, subscribers and the publisher are spread
# over them and messages cross loops. POLLER sets the poller its loops run
# on (its -poller flag: epoll, the default, or uring).
#
#	examples/redis/bench.sh
#	ROUNDS=10 REQUESTS=1000000 PIPELINES=16 examples/redis/bench.sh
#	TESTS=fanout PIPELINES=16 REQUESTS=2000000 LOOPS=2 examples/redis/bench.sh
#	POLLER=uring examples/redis/bench.sh
#
# It needs redis-server, redis-cli and redis-benchmark (Debian packages
# redis-server and redis-tools), taskset, Go, Linux with schedstats in /proc,
# and two CPUs. Per-run lines go to standard error, the table to standard
# output.
set -euo pipefail

ROUNDS=${ROUNDS:-6}
REQUESTS=${REQUESTS:-400000}
CLIENTS=${CLIENTS:-50}
SUBSCRIBERS=${SUBSCRIBERS:-1000}
LOOPS=${LOOPS:-1}
PROCS=${PROCS:-$LOOPS}
POLLER=${POLLER:-epoll}
TESTS=${TESTS:-set,get}
PIPELINES=${PIPELINES:-"1 16"}
SLUICE_PORT=${SLUICE_PORT:-6390}
REDIS_PORT=${REDIS_PORT:-6391}
SERVER_CPU=${SERVER_CPU:-0}
BENCH_CPU=${BENCH_CPU:-1}
MAX_WAIT=${MAX_WAIT:-25}
RETRIES=${RETRIES:-3}

for tool in redis-server redis-cli redis-benchmark taskset go; do
	command -v "$tool" >/dev/null || { echo "bench.sh: $tool is not installed" >&2; exit 1; }
done
[ -r /proc/self/schedstat ] || { echo "bench.sh: /proc/PID/schedstat is missing (CONFIG_SCHED_INFO)" >&2; exit 1; }

tmp=$(mktemp -d)
pids=()
cleanup() {
	for pid in ${pids[@]+"${pids[@]}"}; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

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

(cd "$(dirname "$0")" && go build -o "$tmp/sluice-redis" . && go build -o "$tmp/fanout" ./fanout)
GOMAXPROCS=$PROCS taskset -c "$SERVER_CPU" "$tmp/sluice-redis" -addr "tcp://127.0.0.1:$SLUICE_PORT" -loops "$LOOPS" -poller "$POLLER" >"$tmp/sluice.log" 2>&1 &
sluice_pid=$!
pids+=("$sluice_pid")
taskset -c "$SERVER_CPU" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
	--logfile "$tmp/redis.log" &
redis_pid=$!
pids+=("$redis_pid")
waitFor "$SLUICE_PORT"
waitFor "$REDIS_PORT"

# sched prints the nanoseconds the scheduler has run process $1's threads,
# and how many times it has put them on a CPU.
sched() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1; n += $3 } END { printf "%.0f %.0f\n", s, n }'
}

# waitNS prints the time, in nanoseconds since boot, during which some task
# on the machine was ready to run and waited for a CPU (the kernel's pressure
# stall information), or 0 where the kernel does not keep it.
waitNS() {
	if [ -r /proc/pressure/cpu ]; then
		awk -F'total=' '/^some/ { printf "%.0f\n", $2 * 1000 }' /proc/pressure/cpu
	else
		echo 0
	fi
}

# nowNS prints a monotonic-enough clock in nanoseconds.
nowNS() {
	date +%s%N
}

# load runs test $2 against port $1, $3 requests (deliveries for fanout),
# pipeline $4, on BENCH_CPU, and prints redis-benchmark's CSV. It execs
# the client, so that the subshell running it has no other child.
load() {
	if [ "$2" = fanout ]; then
		exec taskset -c "$BENCH_CPU" "$tmp/fanout" -addr "127.0.0.1:$1" -subscribers "$SUBSCRIBERS" -deliveries "$3" -window "$4" -csv
	fi
	exec taskset -c "$BENCH_CPU" redis-benchmark -p "$1" -t "$2" -n "$3" -c "$CLIENTS" -P "$4" --csv
}

# bench runs redis-benchmark test $4 with pipeline $3 against server $1
# (process $5) on port $2, $6 requests, and, unless $7 is "warm", appends
# "server pipeline round test requests server_ns client_ns wall_ns rps
# wait_ns runs" to the results: wait_ns is the time some task waited for a
# CPU meanwhile, runs how many times the server was put on a CPU. It sets dirty to 1 when wait_ns is over MAX_WAIT percent of the
# run's wall time.
bench() {
	local server=$1 port=$2 p=$3 test=$4 pid=$5 n=$6 mode=$7
	local s0 s1 r0 r1 t0 t1 w0 w1 c rows rps requests wait
	w0=$(waitNS)
	read -r s0 r0 < <(sched "$pid")
	t0=$(nowNS)
	# The subshell's only child is the client (load and taskset exec it),
	# so the second line of times is that child's CPU time.
	c=$( ( (load "$port" "$test" "$n" "$p") >"$tmp/out"; times) |
		awk 'NR == 2 { split($1, u, /[ms]/); split($2, k, /[ms]/); printf "%.0f\n", (u[1] * 60 + u[2] + k[1] * 60 + k[2]) * 1e9 }')
	t1=$(nowNS)
	read -r s1 r1 < <(sched "$pid")
	w1=$(waitNS)
	[ "$mode" = warm ] && return
	# A test may print more than one row (PING does); count every row's
	# requests and combine their rates.
	read -r rows rps < <(awk -F, -v n="$n" 'NR > 1 { gsub(/"/, ""); rows++; t += n / $2 } END { if (rows) printf "%d %.0f\n", rows, rows * n / t; else print 0, 0 }' "$tmp/out")
	if [ "$rows" -eq 0 ]; then
		echo "bench.sh: redis-benchmark -t $test printed no result against $server" >&2
		exit 1
	fi
	requests=$((rows * n))
	wait=$((w1 - w0))
	[ $((100 * wait > MAX_WAIT * (t1 - t0))) -eq 1 ] && dirty=1
	echo "$server $p $id $(echo "$test" | tr '[:lower:]' '[:upper:]') $requests $((s1 - s0)) $c $((t1 - t0)) $rps $wait $((r1 - r0))" | tee -a "$tmp/results" >&2
}

# turn runs every test against one server, after FLUSHALL.
turn() {
	local server=$1 p=$2 n=$3 mode=$4 port pid test
	if [ "$server" = sluice ]; then port=$SLUICE_PORT pid=$sluice_pid; else port=$REDIS_PORT pid=$redis_pid; fi
	redis-cli -p "$port" FLUSHALL >/dev/null
	for test in ${TESTS//,/ }; do
		bench "$server" "$port" "$p" "$test" "$pid" "$n" "$mode"
	done
}

echo "bench.sh: server pipeline round test requests server_ns client_ns wall_ns rps wait_ns runs" >&2
id=warm-up
for p in $PIPELINES; do
	turn sluice "$p" $((REQUESTS / 4)) warm
	turn redis "$p" $((REQUESTS / 4)) warm
done
for round in $(seq "$ROUNDS"); do
	for p in $PIPELINES; do
		for try in $(seq "$RETRIES"); do
			dirty=0
			id=$round.$try
			if [ $((round % 2)) -eq 1 ]; then
				turn sluice "$p" "$REQUESTS" measure
				turn redis "$p" "$REQUESTS" measure
			else
				turn redis "$p" "$REQUESTS" measure
				turn sluice "$p" "$REQUESTS" measure
			fi
			[ "$dirty" -eq 0 ] && break
			echo "bench.sh: round $round, -P $p: tasks waited for a CPU over $MAX_WAIT% of a run; again" >&2
		done
	done
	echo "bench.sh: round $round of $ROUNDS done" >&2
done

echo "tests $TESTS, $REQUESTS requests (fanout: deliveries to $SUBSCRIBERS subscribers) over $CLIENTS clients, -P $PIPELINES, $LOOPS loop(s) on $POLLER; $ROUNDS rounds (A B, B A); pairs with tasks waiting for a CPU over $MAX_WAIT% of the time run again and left out; $(redis-server --version | cut -d' ' -f1-3)"
echo
awk -v tests="$TESTS" -v pipelines="$PIPELINES" -v maxwait="$MAX_WAIT" '
	function median(list,    v, n, i, j, t) {
		n = split(list, v, " ")
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && v[j-1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t }
		return n % 2 ? v[(n+1)/2] : (v[n/2] + v[n/2+1]) / 2
	}
	{
		k = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4
		cpu[k] = $6 / $5; runs[k] = 1000 * $11 / $5; client[k] = $7 / $8; share[k] = $6 / $8; rps[k] = $9; wait[k] = $10 / $8
		rounds[$3] = 1
		if (100 * wait[k] > maxwait) dirty[$2, $3] = 1
	}
	END {
		print "| test | pipeline | sluice ns/req | redis-server ns/req | CPU ratio (median) | CPU ratio (range) | pairs kept | sluice req/s | redis-server req/s | client CPU (sluice / redis runs) | server CPU (sluice / redis) | server wake-ups per 1,000 requests (sluice / redis) |"
		print "|---|---:|---:|---:|---:|---|---:|---:|---:|---|---|---|"
		nt = split(toupper(tests), test, ",")
		np = split(pipelines, pipe, " ")
		for (i = 1; i <= np; i++) {
			for (j = 1; j <= nt; j++) {
				sc = rc = q = sr = rr = scl = rcl = ssh = rsh = sw = rw = ""; lo = 1e18; hi = 0; pairs = all = 0
				for (r in rounds) {
					a = "sluice" SUBSEP pipe[i] SUBSEP r SUBSEP test[j]
					b = "redis" SUBSEP pipe[i] SUBSEP r SUBSEP test[j]
					if (!(a in cpu) || !(b in cpu)) continue
					all++
					if ((pipe[i], r) in dirty) continue
					pairs++
					sc = sc " " cpu[a]; rc = rc " " cpu[b]
					ratio = cpu[a] / cpu[b]; q = q " " ratio
					if (ratio < lo) lo = ratio
					if (ratio > hi) hi = ratio
					sr = sr " " rps[a]; rr = rr " " rps[b]
					scl = scl " " client[a]; rcl = rcl " " client[b]
					ssh = ssh " " share[a]; rsh = rsh " " share[b]
					sw = sw " " runs[a]; rw = rw " " runs[b]
				}
				if (!pairs) {
					printf "| %s | %d | | | | | 0 of %d | | | | | |\n", test[j], pipe[i], all
					continue
				}
				printf "| %s | %d | %.0f | %.0f | %.2fx | %.2f-%.2fx | %d of %d | %.0f | %.0f | %.0f%% / %.0f%% | %.0f%% / %.0f%% | %.1f / %.1f |\n",
					test[j], pipe[i], median(sc), median(rc), median(q), lo, hi, pairs, all,
					median(sr), median(rr), 100 * median(scl), 100 * median(rcl), 100 * median(ssh), 100 * median(rsh),
					median(sw), median(rw)
			}
		}
	}' "$tmp/results"
