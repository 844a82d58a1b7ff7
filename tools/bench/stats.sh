# Sourced by the benchmark scripts: statistics of numbers on stdin.

# the median
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# the spread: half the range, as a percentage of the median
spread() {
	sort -n | awk '{ v[NR] = $1 } END {
		m = v[int((NR + 1) / 2)]
		printf "±%.1f%%", m ? 50 * (v[NR] - v[1]) / m : 0 }'
}

# ratio A B [DIGITS]: A / B with DIGITS decimals (default 3)
ratio() { awk -v a="$1" -v b="$2" -v d="${3:-3}" 'BEGIN { printf "%.*f", d, a / b }'; }
