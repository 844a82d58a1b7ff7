// SPDX-License-Identifier: GPL-2.0
/* Log2 latency histograms: their count, and printed the libbpf-tools way. */
#include "shmem_tools.h"

__u64 shmem_hist_count(const struct shmem_hist *h)
{
	__u64 n = 0;

	for (int i = 0; i < SHMEM_HIST_SLOTS; i++)
		n += h->slots[i];
	return n;
}

/*
 * The first and last whole ns of slot @i, in @unit ns, as "low -> high":
 * the same bounds in ns and in ms (exact: at most 6 decimals of ms)
 */
static void slot_range(int i, double unit, char *buf, size_t len)
{
	unsigned long long lo = i ? (1ULL << (i - 1)) + 1 : 0;

	if (i > SHMEM_HIST_TOP)
		snprintf(buf, len, "%.15g -> +Inf", lo / unit);
	else
		snprintf(buf, len, "%.15g -> %.15g", lo / unit, (1ULL << i) / unit);
}

void shmem_print_log2(FILE *out, const struct shmem_hist *h, bool ms)
{
	const int width = 40;
	const double unit = ms ? 1e6 : 1;
	__u64 max = 0, count = shmem_hist_count(h);
	int first = -1, last = -1;

	for (int i = 0; i < SHMEM_HIST_SLOTS; i++) {
		if (h->slots[i]) {
			if (first < 0)
				first = i;
			last = i;
			if (h->slots[i] > max)
				max = h->slots[i];
		}
	}
	if (last < 0) {
		fprintf(out, "     (no events)\n");
		return;
	}
	/* with -m the same bounds and average, in ms */
	fprintf(out, "%24s : %-10s %s\n", ms ? "msecs" : "nsecs", "count",
		"distribution");
	for (int i = first; i <= last; i++) {
		int bar = (int)(h->slots[i] * width / max);
		char range[48];

		slot_range(i, unit, range, sizeof(range));
		fprintf(out, "%24s : %-10llu |%-*.*s|\n", range,
			(unsigned long long)h->slots[i], width, bar,
			"****************************************");
	}
	fprintf(out, "%24s   count %llu, average %.*f %s\n", "",
		(unsigned long long)count, ms ? 6 : 0,
		count ? (double)h->sum / count / unit : 0.0, ms ? "ms" : "ns");
}
