# The host-side shell tests' counters and check line, sourced from the
# checkout's top: `ok STATUS MESSAGE` prints "ok - MESSAGE" when STATUS
# is 0, else "not ok - MESSAGE", and counts it in $passed or $failed.
passed=0 failed=0
ok() {	# ok CONDITION-STATUS MESSAGE
	if [ "$1" = 0 ]; then
		passed=$((passed + 1)); echo "ok - $2"
	else
		failed=$((failed + 1)); echo "not ok - $2"
	fi
}
