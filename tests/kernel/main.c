// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel tests, run as root in the guest on the patched kernel:
 * shmem_kernel_test [SEED [RANDOM_OPS]], or shmem_kernel_test --nokmem
 * for the memory cgroup reclaim tests alone, in a boot with
 * cgroup.memory=nokmem.  TAP lines, then "N passed, N failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib.h"

int main(int argc, char **argv)
{
	bool nokmem = argc > 1 && !strcmp(argv[1], "--nokmem");
	unsigned int seed = argc > 1 && !nokmem ? strtoul(argv[1], NULL, 0) : (unsigned int)getpid();
	long ops = argc > 2 ? atol(argv[2]) : 100000;
	const char *large, *plain, *huge, *hugelarge;

	setvbuf(stdout, NULL, _IOLBF, 0);
	large = mount_tmpfs("large", "large_folios");
	plain = mount_tmpfs("default", "");
	huge = mount_tmpfs("huge", "huge=always");
	if (nokmem) {
		shrink_tests(large, plain, huge, true);
		goto out;
	}
	hugelarge = mount_tmpfs("hugelarge", "huge=always,large_folios");

	folio_tests(large, plain, huge, seed, ops);
	trace_tests(large, plain, huge, hugelarge);
	regress_tests(large, plain, huge, hugelarge);
	review_tests(huge);
	review3_tests(large, plain, huge);
	ramp_tests(large, plain);
	shrink_tests(large, plain, huge, false);
	mount_option_tests(large);
	eof_tests(large, plain, huge, hugelarge);
	write_source_tests(large, plain, huge);
out:
	test_kernel_log();

	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
