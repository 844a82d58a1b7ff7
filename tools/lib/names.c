// SPDX-License-Identifier: GPL-2.0
/* Names of what the maps count, and names made safe to print. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "shmem_tools.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *const path_names[SHMEM_STAT_NR_PATHS] = {
	"write", "fallocate", "fault", "read", "kernel", "swapin", "collapse",
	"userfault", "other",
};
static const char *const fallback_names[SHMEM_STAT_NR_FALLBACKS] = {
	"alloc", "charge", "raced", "nospc", "unsuitable", "other",
};
static const char *const split_names[SHMEM_STAT_NR_SPLITS] = {
	"shrink", "truncate", "swapout", "other",
};
static const char *const zero_names[SHMEM_STAT_NR_ZEROS] = {
	"unwritten", "partial", "nomem", "split", "other",
};
static const char *const hist_names[SHMEM_NR_HISTS] = {
	"alloc", "write", "fault", "fallocate", "uptodate",
};
static const char *const row_kind_names[SHMEM_NR_ROW_KINDS] = {
	"files", "procs", "cgroups", "fses",
};
static const char *const sort_names[SHMEM_NR_SORTS] = {
	"allocs", "large", "fallbacks", "splits", "partial", "latency", "ramp",
	"name",
};

static const char *const signal_labels[SHMEM_NR_SIGNALS] = {
	"allocs", "paths", "fallbacks", "fallback_reasons", "blocks", "zeroed",
	"splits", "alloc_latency", "write_latency", "fault_latency",
	"fallocate_latency", "uptodate_latency", "swapins", "ramp",
};

/* What each signal is, for the line that says which ones are missing. */
static const char *const signal_names[SHMEM_NR_SIGNALS] = {
	"allocations", "exact allocation paths", "fallbacks",
	"fallback reasons", "block-uptodate transitions", "bytes zeroed",
	"splits", "allocation latency", "write latency", "fault latency",
	"fallocate latency", "allocated-to-uptodate time",
	"swap-in allocations", "append ramp",
};

#define NAME_OF(table, i) ((i) < ARRAY_SIZE(table) ? (table)[i] : "?")

const char *shmem_path_name(unsigned int i) { return NAME_OF(path_names, i); }
const char *shmem_fallback_name(unsigned int i) { return NAME_OF(fallback_names, i); }
const char *shmem_split_name(unsigned int i) { return NAME_OF(split_names, i); }
const char *shmem_zero_name(unsigned int i) { return NAME_OF(zero_names, i); }
const char *shmem_hist_name(unsigned int i) { return NAME_OF(hist_names, i); }
const char *shmem_row_kind_name(enum shmem_row_kind k) { return NAME_OF(row_kind_names, k); }
const char *shmem_sort_name(enum shmem_sort s) { return NAME_OF(sort_names, s); }
const char *shmem_signal_name(unsigned int i) { return NAME_OF(signal_labels, i); }

int shmem_sort_parse(const char *name, enum shmem_sort *sort)
{
	for (unsigned int i = 0; i < SHMEM_NR_SORTS; i++) {
		if (!strcmp(name, sort_names[i])) {
			*sort = i;
			return 0;
		}
	}
	return -1;
}

void shmem_size_name(unsigned long kb, char *buf, size_t len)
{
	if (kb >= 1024 && !(kb % 1024))
		snprintf(buf, len, "%luM", kb / 1024);
	else
		snprintf(buf, len, "%luK", kb);
}

void shmem_order_size(unsigned int order, char *buf, size_t len)
{
	shmem_size_name(4UL << order, buf, len);
}

void shmem_dev_name(__u32 dev, char *buf, size_t len)
{
	snprintf(buf, len, "%u:%u", dev >> 20, dev & ((1U << 20) - 1));
}

void shmem_missing_signals(const struct shmem_info *info, char *buf, size_t len)
{
	__u32 signals = info->signals | info->disabled;
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; i < SHMEM_NR_SIGNALS && used < len; i++) {
		if (signals & (1U << i))
			continue;
		used += snprintf(buf + used, len - used, "%s%s",
				 used ? ", " : "", signal_names[i]);
	}
}

json_object *shmem_missing_json(const struct shmem_info *info)
{
	__u32 signals = info->signals | info->disabled;
	json_object *list = json_object_new_array();

	for (unsigned int i = 0; i < SHMEM_NR_SIGNALS; i++)
		if (!(signals & (1U << i)))
			json_object_array_add(list,
				json_object_new_string(signal_names[i]));
	return list;
}

json_object *shmem_not_traced_json(const struct shmem_info *info)
{
	json_object *list = json_object_new_array();

	for (unsigned int i = 0; i < SHMEM_NR_SIGNALS; i++)
		if (info->disabled & (1U << i))
			json_object_array_add(list,
				json_object_new_string(signal_names[i]));
	return list;
}

int shmem_parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/*
 * Length of the UTF-8 sequence at @s (at most @n bytes): 1-4 if valid,
 * 0 if not, -1 if it is the valid start of a sequence cut at @n.
 */
static int utf8_len(const unsigned char *s, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	int len;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	/* no overlong forms, no surrogates, nothing above U+10FFFF */
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	for (int i = 1; i < len; i++) {
		if ((size_t)i >= n)
			return -1;
		if (s[i] < lo || s[i] > hi)
			return 0;
		lo = 0x80;
		hi = 0xbf;
	}
	return len;
}

void shmem_clean_name(const char *in, size_t len, bool truncated, char *out)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t n = strnlen(in, len), i = 0;
	char *o = out;

	while (i < n) {
		int l = utf8_len(s + i, n - i);

		if (l < 0 && truncated)
			break;	/* a character the kernel's copy cut in two */
		if (l == 1 && s[i] >= 0x20 && s[i] != 0x7f && s[i] != '\\') {
			*o++ = s[i++];
		} else if (l == 1 && s[i] == '\\') {
			*o++ = '\\';
			*o++ = '\\';
			i++;
		} else if (l > 1 && !(s[i] == 0xc2 && s[i + 1] < 0xa0)) {
			/* valid, and not a C1 control (U+0080-U+009F) */
			memcpy(o, s + i, l);
			o += l;
			i += l;
		} else {
			/* the escape covers one byte; a C1 control is two */
			int bytes = l == 2 ? 2 : 1;

			for (int b = 0; b < bytes; b++)
				o += sprintf(o, "\\x%02x", s[i + b]);
			i += bytes;
		}
	}
	*o = '\0';
}
