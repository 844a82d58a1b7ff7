// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel tests, run as root in the guest on the patched kernel:
 * shmem_kernel_test [SEED [RANDOM_OPS]].  TAP lines, then
 * "N passed, N failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "lib.h"

int main(int argc, char **argv)
{
	unsigned int seed = argc > 1 ? strtoul(argv[1], NULL, 0) : (unsigned int)getpid();
	long ops = argc > 2 ? atol(argv[2]) : 100000;
	const char *large, *plain, *huge, *hugelarge;

	setvbuf(stdout, NULL, _IOLBF, 0);
	large = mount_tmpfs("large", "large_folios");
	plain = mount_tmpfs("default", "");
	huge = mount_tmpfs("huge", "huge=always");
	hugelarge = mount_tmpfs("hugelarge", "huge=always,large_folios");

	folio_tests(large, plain, huge, seed, ops);
	trace_tests(large, plain, huge, hugelarge);
	regress_tests(large, plain, huge, hugelarge);
	review_tests(huge);
	review3_tests(large, plain, huge);
	ramp_tests(large, plain);
	mount_option_tests(large);
	test_kernel_log();

	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
